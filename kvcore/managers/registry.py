"""Which manager runs which spec, and how an op script's group config becomes a spec.

Two tables, each extended by one call:

* `register_manager(SpecClass, ManagerClass, kind=...)`: the manager for a spec type (looked up
  along the spec's MRO, so a subclass inherits its parent's manager unless registered itself)
  and the ``kv_cache_spec_kind`` string vLLM puts in `BlockStored` events.
* `register_group_type(name, build, keys=...)`: an op-script group type, e.g. ``{"type":
  "full"}``, and the keys it reads beside ``type`` and ``block_size`` (any other is refused);
  ``build(group_config: dict, block_size: int) -> spec`` raises ValueError with a message naming
  the bad field.

vLLM's `KVCacheSpecRegistry` (`v1/kv_cache_spec_registry.py`) in small.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvcore.managers.base import SingleTypeKVCacheManager
from kvcore.managers.chunked_local import ChunkedLocalAttentionManager
from kvcore.managers.circular_buffer import CircularBufferManager
from kvcore.managers.cross_attention import CrossAttentionManager
from kvcore.managers.fine_full_attention import FineFullAttentionManager
from kvcore.managers.full_attention import FullAttentionManager
from kvcore.managers.mamba import MambaManager
from kvcore.managers.mamba_partial import FineMambaManager
from kvcore.managers.rswa import RSWAManager
from kvcore.managers.sliding_window import SlidingWindowManager
from kvcore.specs import (
    ChunkedLocalAttentionSpec,
    CircularBufferSpec,
    CrossAttentionSpec,
    FullAttentionSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    RSWASpec,
    SlidingWindowSpec,
)
from kvcore.window_mla_spec import SlidingWindowMLASpec

MANAGERS: dict[type, type[SingleTypeKVCacheManager]] = {}
SPEC_KINDS: dict[type, str] = {}
GROUP_TYPES: dict[str, Callable[[dict, int], KVCacheSpec]] = {}
GROUP_KEYS: dict[str, tuple[str, ...]] = {}     # a group type's own keys (beside type, block_size)
# the types by their first names, no alias: what a refusal lists (all 11 names made a long line)
GROUP_NAMES: list[str] = []


def register_manager(spec_cls: type, manager_cls: type[SingleTypeKVCacheManager],
                     kind: str = "unknown") -> None:
    MANAGERS[spec_cls] = manager_cls
    SPEC_KINDS[spec_cls] = kind


def register_group_type(name: str, build: Callable[[dict, int], KVCacheSpec],
                        aliases: tuple[str, ...] = (), keys: tuple[str, ...] = ()) -> None:
    GROUP_NAMES.append(name)
    for n in (name, *aliases):
        GROUP_TYPES[n] = build
        GROUP_KEYS[n] = keys


def _lookup(table: dict[type, Any], spec: KVCacheSpec) -> Any:
    for cls in type(spec).__mro__:
        if cls in table:
            return table[cls]
    return None


# With partial hash hits (`--prefix-match-unit` finer than a block), the managers of the groups
# coarser than the hash block: hits inside a block (a kind not listed has no such mode).
FINE_MANAGERS: dict[type, type[SingleTypeKVCacheManager]] = {
    FullAttentionManager: FineFullAttentionManager, MambaManager: FineMambaManager}


def fine_manager_class(cls: type[SingleTypeKVCacheManager]) -> type[SingleTypeKVCacheManager]:
    return FINE_MANAGERS.get(cls, cls)


def get_manager_class(spec: KVCacheSpec) -> type[SingleTypeKVCacheManager]:
    cls = _lookup(MANAGERS, spec)
    if cls is None:
        raise ValueError(f"no KV cache manager registered for {type(spec).__name__}")
    return cls


def spec_kind(spec: KVCacheSpec) -> str:
    """vLLM's `KVCacheSpecKind` value for events (``full_attention``, ``sliding_window``...)."""
    return _lookup(SPEC_KINDS, spec) or "unknown"


def spec_sliding_window(spec: KVCacheSpec) -> int | None:
    """The window events report: only a sliding-window spec has one (as in vLLM)."""
    return spec.sliding_window if isinstance(spec, SlidingWindowSpec) else None


def _positive_int(cfg: dict, key: str) -> int:
    if key not in cfg:
        raise ValueError(f"field '{key}': missing (group type {cfg.get('type')!r} needs it)")
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"field '{key}': must be a positive integer, got {v!r}")
    return v


def spec_from_group_config(cfg: Any, block_size: int) -> KVCacheSpec:
    """The spec for one op-script group (1 KV head of size 1, float32: sizes do not matter)."""
    if not isinstance(cfg, dict):
        # ValueError, like every other bad-config answer here (the caller reports them all).
        raise ValueError(f"field 'groups': each group must be an object, got {cfg!r}")  # noqa: TRY004
    kind = cfg.get("type")
    # (a list or an object is no type name: unhashable, it was a TypeError traceback)
    build = GROUP_TYPES.get(kind) if isinstance(kind, str) else None
    if build is None:
        raise ValueError(f"field 'type': unknown group type {kind!r} "
                         f"(known: {', '.join(GROUP_NAMES)}, or the names an event header "
                         "gives them)")
    own = ("type", "block_size", *GROUP_KEYS[kind])  # type: ignore[index]
    # a misspelt key ("window" for "sliding_window") ran the group without it, silently; an
    # event header's null window or chunk of another group type pastes back
    unknown = [k for k in cfg if k not in own and not (
        k in ("sliding_window", "attention_chunk_size") and cfg[k] is None)]
    if unknown:
        raise ValueError(f"field {unknown[0]!r}: not a key of a {kind} group (it takes "
                         f"{', '.join(own)})")
    return build(cfg, block_size)


register_manager(FullAttentionSpec, FullAttentionManager, "full_attention")
# vLLM: MLA layers run the full-attention manager; their events say "mla_attention"
register_manager(MLAAttentionSpec, FullAttentionManager, "mla_attention")
register_manager(SlidingWindowSpec, SlidingWindowManager, "sliding_window")
# (DeepSeek-V4's windows over MLA states: the sliding window's manager, an event kind of its own)
register_manager(SlidingWindowMLASpec, SlidingWindowManager, "sliding_window_mla")
register_manager(ChunkedLocalAttentionSpec, ChunkedLocalAttentionManager,
                 "chunked_local_attention")
register_manager(MambaSpec, MambaManager, "mamba")
register_manager(CrossAttentionSpec, CrossAttentionManager, "cross_attention")
# (vLLM 0.33's newer kinds: a ring has no event kind of its own and is never cached; R-SWA's
# blocks are stored as full attention's. SinkFullAttentionSpec gets no manager: vLLM 0.33's
# coordinator cannot build its SinkFullAttentionManager, see `_sink_full_group`.)
register_manager(CircularBufferSpec, CircularBufferManager, "unknown")
register_manager(RSWASpec, RSWAManager, "full_attention")

# (aliases: the kinds a replay's summary and event header name its groups by, so they paste back)
register_group_type("full", lambda cfg, bs: FullAttentionSpec(block_size=bs),
                    aliases=("full_attention",))
# (an MLA group's blocks are a full-attention group's: one latent a token, the manager the same)
register_group_type("mla", lambda cfg, bs: MLAAttentionSpec(block_size=bs),
                    aliases=("mla_attention",))
register_group_type(
    "sliding_window",
    lambda cfg, bs: SlidingWindowSpec(block_size=bs,
                                      sliding_window=_positive_int(cfg, "sliding_window")),
    aliases=("sliding", "swa"), keys=("sliding_window",))
register_group_type(
    "chunked_local",
    lambda cfg, bs: ChunkedLocalAttentionSpec(
        block_size=bs, attention_chunk_size=_positive_int(cfg, "attention_chunk_size")),
    aliases=("chunked", "chunked_local_attention"), keys=("attention_chunk_size",))
def _mamba_group(cfg: dict, bs: int) -> MambaSpec:
    """A Mamba group in an op script or a trace's config line: one float32 state of
    `state_size` values (sizes do not matter); ``"checkpoint": true`` is a Mamba2 layer
    (vLLM's MambaMixer2: one prefill checkpoint block, alignment 1), else Jamba's Mamba1.
    ``"checkpoint_alignment": N`` (with a checkpoint only) is the spec's
    ``prefill_checkpoint_alignment``: a checkpoint is written from inside a chunk only N tokens
    apart from the chunk's start (a Gated DeltaNet layer on FlashInfer's kernel declares the
    Mamba block, or lcm(prefix_match_unit, 64) with a unit). vLLM asserts only that it is
    positive: its platform makes the block a multiple of a real layer's alignment, a config
    line's groups are taken as given."""
    ckpt = cfg.get("checkpoint", False)
    if not isinstance(ckpt, bool):
        # ValueError, like every other bad-config answer here (the caller reports them all).
        raise ValueError(f"field 'checkpoint': must be true or false, got {ckpt!r}")  # noqa: TRY004
    align = 1
    if "checkpoint_alignment" in cfg:
        align = _positive_int(cfg, "checkpoint_alignment")
        if not ckpt:
            raise ValueError("field 'checkpoint_alignment': only with \"checkpoint\": true (a "
                             "group without prefill checkpoint blocks has no alignment)")
    return MambaSpec(block_size=bs,
                     shapes=((_positive_int({"state_size": 1, **cfg}, "state_size"),),),
                     dtypes=("float32",), num_prefill_checkpoint_blocks=int(ckpt),
                     prefill_checkpoint_alignment=align if ckpt else None)


register_group_type("mamba", _mamba_group,
                    keys=("checkpoint", "checkpoint_alignment", "state_size"))


register_group_type("circular_buffer", lambda cfg, bs: CircularBufferSpec(block_size=bs),
                    aliases=("ring",))
register_group_type(
    "rswa", lambda cfg, bs: RSWASpec(block_size=bs, rswa_window=_positive_int(cfg, "rswa_window")),
    keys=("rswa_window",))


def _sink_full_group(cfg: dict, bs: int) -> KVCacheSpec:
    """vLLM 0.33 cannot run a SinkFullAttentionSpec group: its coordinator passes every manager
    ``needs_kv_cache_zeroing``, which `SinkFullAttentionManager.__init__` does not take (a
    TypeError when the engine starts; tests/data/managers_033/sink-*). Refused, saying so."""
    _positive_int(cfg, "sink_len")
    raise ValueError("field 'type': a sink_full group cannot run: vLLM 0.33 fails to build its "
                     "SinkFullAttentionManager (TypeError: unexpected keyword argument "
                     "'needs_kv_cache_zeroing')")


register_group_type("sink_full", _sink_full_group, aliases=("sink_full_attention",),
                    keys=("sink_len",))
