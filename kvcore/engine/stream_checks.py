"""What the replay's event streams decide at start-up (`ReplayContext` asks once the sinks are
known): whether a hash option shows anywhere, and whether our stream can say the run at all.

* A block hash changes no hit and no step: only the streams that show hashes (ours and vLLM's,
  `shows_hashes`), a CPU tier's --steps lines (their jobs list the chunk keys) and its
  summary's `policy_state_end` (which lists them too) differ. With none of them, a hash option
  given (a flag, or a config line's key in either spelling) did nothing and is said; with one,
  an unseeded xxhash is said to match no server's hashes (vLLM seeds it at random).
* Our stream holds one hash a block (what `kvcli stats` / `curve` rebuild): a block under
  several keys and the copies' held references of partial-block hits are not in its
  vocabulary, so such a run is refused with it (`--events-format vllm` says them).
"""

from __future__ import annotations

from kvcore.engine.options import ReplayOptions
from kvcore.engine.refusal import named
from kvcore.errors import InputError
from kvcore.traces import Trace


def hash_warnings(cfg: ReplayOptions, trace: Trace, *, hashed: bool, shown: bool,
                  tier_keys_shown: bool) -> list[str]:
    """The warnings on the hash options: ``hashed``, whether the run hashes blocks at all;
    ``shown``, whether an event stream shows the hashes; ``tier_keys_shown``, whether a CPU
    tier's chunk keys show (its --steps lines or its summary)."""
    out = []
    if hashed and shown and cfg.hash_algo.startswith("xxhash") and cfg.hash_seed is None:
        out.append(f"event hashes: vLLM seeds {cfg.hash_algo} at random unless "
                   "PYTHONHASHSEED is set, so no server's hashes are these; give its "
                   "PYTHONHASHSEED as hash_seed")
    if hashed and not shown and not (cfg.offloading and tier_keys_shown) and (
            hashing := sorted({*(cfg.given or ()), *trace.config_keys}
                              & {"hash_algo", "hash_seed"})):
        out.append(f"option(s) {named(hashing, trace, cfg)}: no effect here: no event stream "
                   "shows a block hash (they change no hit and no step)")
    return out


def check_our_stream(writes_ours: bool, partial_hits: bool) -> None:
    """Refuse our event stream beside partial-block hits (the module doc)."""
    if writes_ours and partial_hits:
        raise InputError("our event stream (--events-format jsonl) does not model "
                         "partial-block hits (a --prefix-match-unit finer than the block): "
                         "use --events-format vllm, or leave the unit unset",
                         field="events")
