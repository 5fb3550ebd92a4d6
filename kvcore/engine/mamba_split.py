"""vLLM 0.33's aligned prefill split for Mamba groups in ``align`` cache mode.

A Mamba group keeps one running state a request; the only states a later request can reuse are
those the worker writes at the end of a scheduled chunk. With prefix caching on, vLLM 0.33 runs
a hybrid Mamba model in ``align`` mode (``MambaModelConfig``) and its scheduler clips every
prefill chunk (``Scheduler._mamba_block_aligned_split``) so that it ends where a state must be
cached: on a block boundary, and never past the last block boundary before the request's last
token, nor past the block-floored junction of a shared prefix the lookup found cached in only
some groups (``shared_prefix_boundary``). Without the clip a prompt's states would land at
arbitrary positions and no Mamba state but decode's would ever be cached (hit rate 0).

Modelled: the layouts where every group has the scheduler's block size (hash block = block,
so no partial-block hits and no shared-prefix checkpoints, ``mamba_partial_cache_hit`` False)
and no Mamba layer exports checkpoints from inside a chunk (``num_prefill_checkpoint_blocks``
0: Jamba's ``MambaMixer``); no EAGLE block drop, no hash lookahead. Checked step for step
against the real Scheduler: tests/data/sched_mamba/ (``tests/test_replay_mamba_cases.py``).
"""

from __future__ import annotations

from kvcore.engine.scheduler_io import SchedulerConfig
from kvcore.kv_cache_manager import KVCacheManager
from kvcore.request import Request
from kvcore.specs import MambaSpec


def align_block_size(kvm: KVCacheManager) -> int:
    """The block size prefill chunks are clipped to (`Scheduler.mamba_bs`, as vLLM's scheduler
    derives `need_mamba_block_aligned_split` from its KV cache config):
    the scheduler's, when a Mamba group runs in ``align`` mode (prefix caching on); else 0."""
    if not kvm.enable_caching or not any(
            isinstance(m.kv_cache_spec, MambaSpec)
            for m in kvm.coordinator.single_type_managers):
        return 0
    return kvm.scheduler_block_size


def max_prefill_tokens(cfg: SchedulerConfig) -> int:
    """The widest prefill chunk the configuration allows (the step budget, or the long-prefill
    threshold when set and lower; the configured one, not a step's effective one)."""
    t = cfg.long_prefill_token_threshold
    return t if 0 < t < cfg.max_num_batched_tokens else cfg.max_num_batched_tokens


def mamba_aligned_split(req: Request, num_new_tokens: int, start: int, block_size: int,
                        max_prefill_tokens: int) -> int:
    """The tokens of a chunk of ``num_new_tokens`` from position ``start`` that vLLM schedules
    (possibly 0: the caller skips the request). ``max_prefill_tokens``: the step budget, or the
    configured long-prefill threshold when lower (a block wider than that may advance sub-block
    and re-align at the next boundary)."""
    # Resumed requests replay their output tokens as prefill too (up to the last one).
    prefill_end = max(req.num_prompt_tokens, req.num_tokens - 1)
    if start >= prefill_end:
        return num_new_tokens
    # The last block boundary whose state can be cached: the last token is always recomputed.
    last_cache_position = max((req.num_tokens - 1) // block_size * block_size, 0)
    end = start + num_new_tokens
    if end < prefill_end:
        # A chunk that stops short of the prefill's end must end on a block boundary (its state
        # is the block's), unless the block cannot be reached by any chunk from here.
        aligned_end = end // block_size * block_size
        if aligned_end > start or block_size <= max_prefill_tokens:
            end = aligned_end
    stop = end
    if start % block_size != 0:
        # a chunk that starts mid-block stops at that block's end
        stop = _earlier(start, (start // block_size + 1) * block_size, stop)
    stop = _earlier(start, last_cache_position, stop)
    junction = req.shared_prefix_boundary
    if start < junction < end:
        # (block-floored: a state inside a block is not cacheable)
        stop = _earlier(start, start + (junction - start) // block_size * block_size, stop)
    return max(stop - start, 0)


def _earlier(start: int, position: int, stop: int) -> int:
    """``position`` if it lies strictly inside ``(start, stop)``, else ``stop``."""
    return position if start < position < stop else stop
