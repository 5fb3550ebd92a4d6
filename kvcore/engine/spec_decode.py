"""Speculative decoding in vLLM 0.33's schedulers (`--speculative-config '{"method": "ngram",
"num_speculative_tokens": K}'`; `kvcore.engine.spec_config` reads it), methods ngram and EAGLE.

A request's known tokens plus its drafts (vLLM's `num_tokens_with_spec`) are what the running
loop schedules towards, so a decode step verifies 1 + K tokens. The drafts come from:
- sync: the model runner after each step that ran the model, K for each request of the batch
  that is not mid-prefill (`EngineCore.post_step` -> `update_draft_token_ids`; `propose`),
  none after a batch none of whose requests can verify them (EAGLE's `skip_drafts`); with
  pipeline parallelism those of the batch just scheduled, before its output;
- async: the AsyncScheduler itself, K placeholders for each request the batch samples
  (`advance_scheduled`), the real drafts staying on the GPU;
- a waiting request admitted with one token to compute (a full prefix hit, a resumed request)
  when no prefill chunk ran this step: padded to 1 + K tokens with placeholder drafts, which
  the target rejects (`pad_admission`).
After the step, `verify` asks the fake model how many drafts it accepts
(`kvcore.engine.spec_accept`) and rolls the rejected ones back: `num_computed_tokens` (and,
under async, the placeholders covering them) drop by the number rejected; their slots stay
allocated, unhashed, to be overwritten. N-gram drafting reserves no lookahead slots, no budget
for drafting and no extra layers, so the KV cache managers see only longer decode steps.
EAGLE also reserves K lookahead slots on every allocation (its drafter writes KV that far past
the scheduled tokens) and, with prefix caching, hashes each block with the token after it
(`kvcore.lookahead_hashes`) or, in vLLM's legacy hash mode, drops a prefix hit's last block.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kvcore.engine.scheduler_io import SchedulerOutput
from kvcore.engine.spec_config import EAGLE_METHODS
from kvcore.errors import InputError
from kvcore.request import Request, RequestStatus

if TYPE_CHECKING:
    from kvcore.engine.scheduler import Scheduler
    from kvcore.specs import KVCacheGroupSpec


def lookahead_tokens(cfg: Any) -> int:
    """vLLM's `num_lookahead_tokens` of the replay options (or a SchedulerConfig): K for EAGLE
    (its drafter writes KV that far past the scheduled tokens), 0 for ngram or without drafts."""
    return cfg.num_speculative_tokens if cfg.spec_method in EAGLE_METHODS else 0


def spec_draft(cfg: Any) -> tuple[str | None, str] | None:
    """(the draft model, the method) where the replay drafts with a draft it knows, an EAGLE
    draft it was given or the model's MTP module (None): its layers and weights size a
    model's pool, its passes are timed; else None."""
    if not lookahead_tokens(cfg):
        return None
    if cfg.spec_method == "mtp":
        return None, "mtp"
    return (cfg.spec_model, cfg.spec_method) if cfg.spec_model else None


def hash_lookahead(cfg: Any) -> bool:
    """Whether block hashes cover the token after each block (vLLM's
    `num_hash_lookahead_tokens` 1): EAGLE with prefix caching, unless
    `disable_lookahead_block_hashes` (`kvcore.lookahead_hashes`), or with the CPU tier (KV
    connectors keep the legacy hashes, config/vllm.py:686-688)."""
    return (lookahead_tokens(cfg) > 0 and cfg.enable_prefix_caching
            and not cfg.disable_lookahead_block_hashes and not cfg.offloading)


def eagle_block_drop(cfg: Any) -> bool:
    """Whether a prefix hit drops its last block (vLLM's `use_eagle_block_drop`): EAGLE in the
    legacy hash mode (`disable_lookahead_block_hashes`, or no prefix caching: no lookup then),
    where the last matched block's draft KV must be recomputed. (With lookahead hashes, vLLM's
    default, the hash itself waits for the next token instead: `hash_lookahead`.)"""
    return lookahead_tokens(cfg) > 0 and not hash_lookahead(cfg)


def eagle_group_ids(cfg: Any, groups: Sequence[KVCacheGroupSpec]) -> tuple[int, ...]:
    """The groups flagged as holding EAGLE's draft layers (vLLM's `is_eagle_group`, where the
    legacy hash mode drops: `eagle_block_drop`): the config line's `eagle_groups`, else those
    of a model's pool holding the draft's ``draft.layers.*``. None flagged: every group drops."""
    if not lookahead_tokens(cfg):
        return ()
    if cfg.eagle_groups is not None:
        return tuple(sorted(cfg.eagle_groups))
    # (here, not at the top: a replay without drafts does not load the models' modules)
    from kvcore.models.eagle_draft import is_draft_layer

    return tuple(i for i, g in enumerate(groups)
                 if any(is_draft_layer(name) for name in g.layer_names))


@dataclass(slots=True)
class SpecStats:
    """vLLM's SpecDecodingStats summed over the run: verifications with drafts, the drafts
    verified, those accepted, and the accepted counts by draft position."""

    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    accepted_per_pos: list[int] = field(default_factory=list)

    def add(self, num_draft_tokens: int, num_accepted: int) -> None:
        self.num_drafts += 1
        self.num_draft_tokens += num_draft_tokens
        self.num_accepted_tokens += num_accepted
        per_pos = self.accepted_per_pos
        while len(per_pos) < num_accepted:
            per_pos.append(0)
        for i in range(num_accepted):
            per_pos[i] += 1

    @classmethod
    def summed(cls, parts: list) -> SpecStats:
        """The stats of several runs (their `as_dict`s): a cluster's replicas."""
        out = cls()
        for p in parts:
            out.num_drafts += p["num_drafts"]
            out.num_draft_tokens += p["num_draft_tokens"]
            out.num_accepted_tokens += p["num_accepted_tokens"]
            for i, n in enumerate(p["accepted_per_position"]):
                if i == len(out.accepted_per_pos):
                    out.accepted_per_pos.append(0)
                out.accepted_per_pos[i] += n
        return out

    def as_dict(self) -> dict:
        d = self.num_draft_tokens
        return {"num_drafts": self.num_drafts, "num_draft_tokens": d,
                "num_accepted_tokens": self.num_accepted_tokens,
                "acceptance_rate": self.num_accepted_tokens / d if d else None,
                "mean_acceptance_length": (1 + self.num_accepted_tokens / self.num_drafts
                                           if self.num_drafts else None),
                "accepted_per_position": list(self.accepted_per_pos)}


def schedule_drafts(req: Request, n: int, out: SchedulerOutput) -> None:
    """The running loop scheduled ``n`` tokens of ``req`` (which has drafts): those past its
    known tokens and placeholders are drafts verified this step. Its drafts are spent either
    way (new ones come after the step)."""
    k = n + req.num_computed_tokens - req.num_tokens - req.num_output_placeholders
    if k > 0:
        out.spec[req.request_id] = min(req.num_spec_tokens, k)
    req.num_spec_tokens = 0


def spec_scheduled(sched: Scheduler, req: Request, n: int, out: SchedulerOutput) -> None:
    """The running loop scheduled ``n`` tokens of ``req`` with drafts on: whether a prefill
    chunk is in the step (no padded admissions then), whether the batch needs drafts after it,
    the drafts it verifies (vLLM's running loop, sched:998-1025)."""
    sched.prefill_scheduled |= req.is_prefill_chunk
    note_drafts_needed(req, req.num_computed_tokens, n, out)
    if req.num_spec_tokens:
        schedule_drafts(req, n, out)


def note_drafts_needed(req: Request, computed: int, n: int, out: SchedulerOutput) -> None:
    """vLLM's `_drafts_unused` (sched:502-545) for ``req``, scheduled ``n`` tokens past
    ``computed``: drafts after this batch are needed unless it is a non-final prefill chunk or
    samples its last output token for sure (under async the token in flight counts)."""
    if out.drafts_needed or computed + n < req.num_tokens:
        return
    sure = req.num_output_tokens + 1 + (req.num_output_placeholders > 0)
    out.drafts_needed = sure < req.max_tokens  # type: ignore[operator]


def pad_admission(sched: Scheduler, num_hit: int, budget: int, prefill_scheduled: bool,
                  running_scheduled: bool) -> int:
    """A waiting request with one token to compute after its hit: vLLM pads it to 1 + K (its
    CUDA graph's uniform decode) when no running prefill chunk is in this step and something
    else is (or the request has a hit), and there is room before max_model_len. The tokens to
    schedule; -1: the padded decode does not fit the budget, and vLLM would rather schedule
    nothing than an unpadded one (the waiting loop stops)."""
    k = sched.config.num_speculative_tokens
    if prefill_scheduled or not (running_scheduled or num_hit > 0) \
            or num_hit + 1 + k + 1 > sched.config.max_model_len:
        return 1
    return 1 + k if 1 + k <= budget else -1


def check_padding(req: Request, n: int, k: int, threshold: int) -> None:
    """An admission padded to 1 + K that the long-prefill threshold cut to ``n`` tokens, once
    allocated: vLLM 0.33 fails its assertion there (`assert num_new_tokens == 1 +
    num_spec_tokens`, scheduler.py:1578-1579: its sampler's rows would no longer match), and
    the replay stops too. Only there: where the allocation fails first, the waiting loop just
    breaks (scheduler.py:1455-1462), and a Mamba split drops the padding before it
    (scheduler.py:1360-1370)."""
    if n != 1 + k:
        raise InputError(f"{threshold} cuts the one-token admission of request "
                         f"{req.request_id!r}, padded to 1 + {k} tokens for speculative "
                         f"decoding: vLLM 0.33's scheduler fails an assertion there (give a "
                         f"threshold of at least {1 + k}, or 0)",
                         field="long_prefill_token_threshold")


def propose(sched: Scheduler, out: SchedulerOutput) -> None:
    """Sync scheduling, after a step that ran the model: K drafts for each request of the batch
    still running or waiting, none for one left mid-prefill (vLLM drops drafts proposed after a
    prefill chunk). EAGLE's runner proposes none after a batch none of whose requests can
    verify them (`skip_drafts`): seen only where the drafts come before the batch's output
    (pipeline parallelism), a request sure to finish then staying unscheduled."""
    k = sched.config.num_speculative_tokens
    if sched.lookahead and not out.drafts_needed:
        k = 0
    requests = sched.requests
    for req in out.eager:
        live = requests.get(req.request_id)
        if live is None or live.is_finished():
            continue
        live.num_spec_tokens = 0 if live.is_prefill_chunk else k


def verify(sched: Scheduler, out: SchedulerOutput, req: Request, stale: bool) -> int:
    """``req`` samples in batch ``out``: the tokens its output carries (1 + the drafts
    accepted), the rejected drafts rolled back (unless the output is stale: a preemption
    since reset the counters)."""
    rid = req.request_id
    d = out.spec.get(rid, 0)
    if not d:
        return 1
    # (an admitted request's drafts are its padding's placeholders: all rejected)
    a = 0 if rid in out.admitted else sched.accept(req, d)
    rejected = d - a
    if not stale:
        if req.num_computed_tokens > 0:
            req.num_computed_tokens -= rejected
        if req.num_output_placeholders > 0:
            req.num_output_placeholders -= rejected
    sched.spec_stats.add(d, a)
    return 1 + a


def take_tokens(sched: Scheduler, out: SchedulerOutput, req: Request, stale: bool,
                sample: Callable[[Request], int]) -> bool:
    """vLLM's `update_from_output` for a request that sampled in batch ``out`` with drafts on:
    verify, append its tokens up to a stop (max_tokens or max_model_len, checked token by
    token; a stop trims the rest and the computed tokens they stood for), resolve the
    placeholders they cover, cache the blocks the accepted tokens completed. Whether it
    stopped."""
    running = req.status == RequestStatus.RUNNING
    g = verify(sched, out, req, stale)
    had_placeholders = req.num_output_placeholders > 0       # (read after the rollback)
    max_len = sched.config.max_model_len
    max_tokens: int = req.max_tokens  # type: ignore[assignment]
    stopped = False
    for k in range(1, g + 1):
        req.append_output_token_ids(sample(req))
        if req.num_tokens >= max_len or req.num_output_tokens >= max_tokens:
            stopped = True
            if not stale:
                req.num_computed_tokens -= g - k
            break
    if stale:
        return stopped
    if had_placeholders:
        req.num_output_placeholders -= g
    kvm = sched.kv_cache_manager
    if running and kvm.enable_caching:
        if sched.tracer is not None:
            sched.tracer.req = req.request_id
        kvm.cache_blocks(req, req.num_computed_tokens - req.num_in_flight_tokens)
    return stopped
