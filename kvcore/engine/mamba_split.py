"""vLLM 0.33's aligned prefill split for Mamba groups in ``align`` cache mode.

A Mamba group keeps one running state a request; the only states a later request can reuse are
those the worker writes at the end of a scheduled chunk. With prefix caching on, vLLM 0.33 runs
a hybrid Mamba model in ``align`` mode (``MambaModelConfig``) and its scheduler clips every
prefill chunk (``Scheduler._mamba_block_aligned_split``) so that it ends where a state must be
cached: on a block boundary, and never past the last block boundary before the request's last
token, nor past the block-floored junction of a shared prefix the lookup found cached in only
some groups (``shared_prefix_boundary``). Without the clip a prompt's states would land at
arbitrary positions and no Mamba state but decode's would ever be cached (hit rate 0).

Mamba2 layers (``MambaMixer2``: Bamba, Granite-4.0-H, Nemotron-H) declare a prefill checkpoint
block: the worker can write the state at the prefill's last block boundary from inside a chunk.
When every Mamba group declares one, a chunk that reaches the prefill's end and holds that
boundary past its first block (``checkpoint_fits``) is not clipped there: it runs to its end in
one piece, and the manager reserves a block for the checkpoint
(`kvcore.managers.mamba_checkpoint`).

With a hash block finer than the block (``--prefix-match-unit``, vLLM's
``mamba_partial_cache_hit``) the checkpoint sits on the hash grid and a chunk also stops at the
prompt's last hash boundary (``tail_boundary``: the state a resend hits inside a block). With
vLLM's opt-in ``enable_mamba_shared_prefix_checkpoint`` (its predicate: `KVCacheManager.
mamba_shared_prefix_checkpoint`) a chunk stops at the junction itself, not block-floored, where
it lies within the prompt: the manager keys the state there (`FineMambaManager`;
tests/data/sched_spec_junction/). With EAGLE's legacy block drop every stop above is a
block lower (the full-attention hit drops its last block: a state there would be missed); hash
lookahead moves none. Checked step for step against the real Scheduler: tests/data/sched_mamba/
(``tests/test_replay_mamba_cases.py``, ``tests/test_replay_mamba2_cases.py``), with checkpoint
alignments other than 1 in tests/data/sched_mamba_align/, beside attention groups of other block
sizes (the block: the Mamba group's; the checkpoint's grid: the groups' lcm) in
tests/data/sched_mamba_mixed/ and, with EAGLE drafts, tests/data/sched_spec_eagle_mixed/.
"""

from __future__ import annotations

from kvcore.engine.scheduler_io import SchedulerConfig
from kvcore.kv_cache_manager import KVCacheManager
from kvcore.managers.mamba_checkpoint import checkpoint_fits, checkpoint_position
from kvcore.request import Request
from kvcore.specs import MambaSpec


def align_block_size(kvm: KVCacheManager) -> int:
    """The block size prefill chunks are clipped to (`MambaSplit.block_size`, as vLLM's scheduler
    derives `need_mamba_block_aligned_split` from its KV cache config): the Mamba groups', when
    they run in ``align`` mode (prefix caching on); else 0. vLLM's `_mamba_block_aligned_split`
    reads ``cache_config.block_size``, which align mode makes the Mamba block (the platform sets
    ``mamba_block_size`` to it), not the scheduler's block, the groups' lcm: beside a group of
    twice the block (an EAGLE-3 draft's) chunks stop at the Mamba block
    (tests/data/sched_mamba_mixed/). vLLM's engine core sets ``cache_config.block_size`` to its
    prefix-cacheable groups' smallest block once planned (v1/engine/core.py): under pipeline
    parallelism a stage without attention keeps its Mamba layers at the configured block, below
    the aligned ones' (`kvcore.sizing.stage_specs`), and that smallest block is theirs: the
    Mamba groups' smallest."""
    if not kvm.enable_caching:
        return 0
    return min((m.block_size for m in kvm.coordinator.single_type_managers
                if isinstance(m.kv_cache_spec, MambaSpec)), default=0)


def checkpoint_alignment(kvm: KVCacheManager) -> int:
    """The token alignment of the prefill checkpoints the scheduler may leave inside a chunk
    (vLLM's ``mamba_has_prefill_checkpoint_blocks``, every Mamba group declaring a checkpoint
    block, with the first Mamba group's ``prefill_checkpoint_alignment``); 0: none."""
    if not align_block_size(kvm):
        return 0
    specs = [m.kv_cache_spec for m in kvm.coordinator.single_type_managers
             if isinstance(m.kv_cache_spec, MambaSpec)]
    if any(s.num_prefill_checkpoint_blocks <= 0 for s in specs):
        return 0
    return specs[0].prefill_checkpoint_alignment or 0


def partial_hit_unit(kvm: KVCacheManager) -> int:
    """The hash block when Mamba states may be hit inside a block (vLLM's
    ``mamba_partial_cache_hit``: the coordinator's partial hash hits); else 0."""
    coord = kvm.coordinator
    if not align_block_size(kvm) or not coord.partial_hits \
            or kvm.hash_block_size >= kvm.scheduler_block_size:
        return 0
    return kvm.hash_block_size


class MambaSplit:
    """What a scheduler's split reads from its KV cache manager and config, read once:
    ``block_size`` (`align_block_size`; 0: no Mamba group in align mode, no split) and the rest
    of `mamba_aligned_split`'s arguments."""

    __slots__ = ("block_size", "checkpoint_align", "drop", "grid", "hash_block", "junction",
                 "max_prefill", "unit")

    def __init__(self, kvm: KVCacheManager, cfg: SchedulerConfig) -> None:
        self.block_size = align_block_size(kvm)
        self.max_prefill = max_prefill_tokens(cfg)
        self.checkpoint_align = checkpoint_alignment(kvm)
        self.unit = partial_hit_unit(kvm)       # hits inside a Mamba block
        # vLLM's self.block_size and self.hash_block_size: the checkpoint's grid without hits
        # inside a block, and the grid a chunk holding it must start on
        self.grid = kvm.scheduler_block_size
        self.hash_block = kvm.hash_block_size
        self.drop = kvm.coordinator.use_eagle   # EAGLE's legacy block drop
        # vLLM's Scheduler.mamba_shared_prefix_checkpoint: partial hits and the manager's
        # predicate (scheduler.py:461-464)
        self.junction = bool(self.unit) and kvm.mamba_shared_prefix_checkpoint

    def split(self, req: Request, num_new_tokens: int, start: int) -> int:
        """`mamba_aligned_split` with these settings (``block_size`` must be set)."""
        return mamba_aligned_split(req, num_new_tokens, start, self.block_size,
                                   self.max_prefill, self.checkpoint_align, self.unit,
                                   self.drop, self.junction, grid=self.grid,
                                   hash_block=self.hash_block)


def max_prefill_tokens(cfg: SchedulerConfig) -> int:
    """The widest prefill chunk the configuration allows (the step budget, or the long-prefill
    threshold when set and lower; the configured one, not a step's effective one)."""
    t = cfg.long_prefill_token_threshold
    return t if 0 < t < cfg.max_num_batched_tokens else cfg.max_num_batched_tokens


def mamba_aligned_split(req: Request, num_new_tokens: int, start: int, block_size: int,
                        max_prefill_tokens: int, checkpoint_align: int = 0,
                        unit: int = 0, drop: bool = False, junction: bool = False, *,
                        grid: int = 0, hash_block: int = 0) -> int:
    """The tokens of a chunk of ``num_new_tokens`` from position ``start`` that vLLM schedules
    (possibly 0: the caller skips the request). ``max_prefill_tokens``: the step budget, or the
    configured long-prefill threshold when lower (a block wider than that may advance sub-block
    and re-align at the next boundary). ``checkpoint_align``: `checkpoint_alignment`. ``unit``:
    `partial_hit_unit` (then the checkpoint sits on that grid, and a chunk stops at the prompt's
    last hash boundary, ``num_prompt - 1`` floored, whose state a resend hits). ``drop``:
    EAGLE's legacy block drop (vLLM's ``use_eagle_block_drop``), which moves every such
    position a block lower (`checkpoint_position`). ``junction``: vLLM's
    ``mamba_shared_prefix_checkpoint`` (a chunk stops at the shared-prefix junction itself
    within the prompt, not block-floored). ``grid``: the scheduler's block (the groups' lcm;
    0: ``block_size``), which the checkpoint sits on without ``unit``; ``hash_block``: the hash
    block (0: ``unit`` or ``grid``), which a chunk writing it from inside must start on."""
    # Resumed requests replay their output tokens as prefill too (up to the last one).
    prefill_end = max(req.num_prompt_tokens, req.num_tokens - 1)
    if start >= prefill_end:
        return num_new_tokens
    end = start + num_new_tokens
    # The last block boundary whose state can be cached: the last token is always recomputed.
    last_cache_position = checkpoint_position(req.num_tokens, block_size, drop)
    # A last chunk that holds the prefill's checkpoint writes it from inside: no stop there.
    grid = unit or grid or block_size
    internal = checkpoint_align > 0 and end >= prefill_end and checkpoint_fits(
        start, end, checkpoint_position(prefill_end, grid, drop), block_size, checkpoint_align,
        hash_block or grid)
    if internal:
        last_cache_position = 0
    if end < prefill_end:
        # A chunk that stops short of the prefill's end must end on a block boundary (its state
        # is the block's), unless the block cannot be reached by any chunk from here.
        aligned_end = end // block_size * block_size
        if aligned_end > start or block_size <= max_prefill_tokens:
            end = aligned_end
    stop = end
    if start % block_size != 0 and not internal:
        # a chunk that starts mid-block stops at that block's end
        stop = _earlier(start, (start // block_size + 1) * block_size, stop)
    stop = _earlier(start, last_cache_position, stop)
    if unit and not internal:
        tail = checkpoint_position(req.num_prompt_tokens, unit, drop)
        if last_cache_position < tail < req.num_prompt_tokens:
            stop = _earlier(start, tail, stop)
    at = req.shared_prefix_boundary
    if start < at < end:
        if not (junction and at <= req.num_prompt_tokens):
            # block-floored: without the opt-in a state inside a block is not cached there (nor
            # past the prompt, where the manager keys nothing: a resumed request's replay)
            at = start + (at - start) // block_size * block_size
        stop = _earlier(start, at, stop)
    return max(stop - start, 0)


def _earlier(start: int, position: int, stop: int) -> int:
    """``position`` if it lies strictly inside ``(start, stop)``, else ``stop``."""
    return position if start < position < stop else stop
