"""Mamba2's prefill checkpoint written from inside a chunk (a Mamba group's part;
`kvcore.managers.mamba.MambaManager`, vLLM 0.33's align mode).

Mamba2 layers (vLLM's ``MambaMixer2``; ``num_prefill_checkpoint_blocks`` 1 in the spec) write
a checkpoint from inside a chunk: the state at the last block boundary before the chunk's last
token. When a chunk holds it (`checkpoint_fits`) and reaches the prefill's end (at a retention
other than 0: any chunk), its allocation takes one block more, just before the running state's,
and the caching registers that block as the state at its end (the manager's ``_checkpoints``:
the decision is made when the blocks are counted, as in vLLM, and kept for the allocation and
the caching); the skip frees it once the request computes past it. The scheduler's half (a
chunk holding it is not clipped there) is `kvcore.engine.mamba_split`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.hashing import resolve_block_hashes
from kvcore.specs import cdiv

if TYPE_CHECKING:
    from kvcore.block import KVCacheBlock
    from kvcore.managers.mamba import MambaManager
    from kvcore.request import Request


def checkpoint_position(num_tokens: int, grid: int, drop: bool) -> int:
    """The last position on ``grid`` whose state a prefill of ``num_tokens`` can cache (vLLM
    0.33's get_mamba_prefill_checkpoint_position): before the last token, which is always
    recomputed for its logits (a lookahead hash's token is that one too: single-module drafts
    only); with EAGLE's legacy block drop (``drop``) a grid step below the last whole one,
    which the drop already leaves to recompute."""
    if drop:
        return max(num_tokens // grid * grid - grid, 0)
    return max((num_tokens - 1) // grid * grid, 0)


def checkpoint_fits(start: int, end: int, position: int, block_size: int, align: int,
                    unit: int) -> bool:
    """Whether a chunk ``[start, end)`` can write the state at ``position`` from inside (vLLM
    0.33's is_mamba_prefill_checkpoint_valid; ``unit``: the hash block): the chunk starts on a
    hash boundary, reaches a block past its first, the checkpoint lies at least a hash block
    after its start and before its end, at a multiple of ``align`` from its start."""
    return (start % unit == 0
            and cdiv(end, block_size) - 2 > (start - 1) // block_size
            and start + unit <= position < end
            and (position - start) % align == 0)


def checkpoint_needed(m: MambaManager, request_id: str, start: int, end: int, position: int,
                      prefill_end: int) -> bool:
    """Whether the chunk ``[start, end)`` writes the checkpoint at ``position`` from inside
    (vLLM's _needs_internal_checkpoint): where no state of the request sits yet, or in one of
    an allocated request's speculative blocks (relocated out of the way by the allocation)."""
    index = cdiv(end, m.block_size) - 2
    blocks = m.req_to_blocks.get(request_id, [])
    return (m.checkpoint_align > 0 and end >= prefill_end
            and checkpoint_fits(start, end, position, m.block_size, m.checkpoint_align,
                                m.block_pool.hash_block_size)
            and index >= 0 and (index >= len(blocks) or blocks[index].is_null
                                or (request_id in m._allocated
                                    and index >= len(blocks) - m.num_speculative_blocks)))


def checkpoint_block(m: MambaManager, request_id: str, num_tokens: int,
                     total_computed_tokens: int, prefill_end: int,
                     apply_admission_cap: bool) -> int:
    """1 when the chunk writes its checkpoint (its last aligned position) from inside and so
    needs a block of its own; remembered for the allocation that follows (Mamba2 only)."""
    # (vLLM's drop_eagle_checkpoint_block: any group dropping, `replay_eagle`)
    position = checkpoint_position(num_tokens, m.cache_hit_alignment_tokens, m.replay_eagle)
    ckpt = 1 if checkpoint_needed(m, request_id, total_computed_tokens, num_tokens, position,
                                  prefill_end) else 0
    if not apply_admission_cap:
        if ckpt:
            m._checkpoints[request_id] = (position, cdiv(num_tokens, m.block_size) - 2)
        else:
            m._checkpoints.pop(request_id, None)
    return ckpt


def cache_checkpoint_below(m: MambaManager,
                           request: Request) -> tuple[KVCacheBlock, int] | None:
    """EAGLE's legacy drop puts a chunk's checkpoint a block below the end of the block reserved
    for it (`checkpoint_position`): vLLM re-keys that block as the state of the tokens up to
    the checkpoint (`_cache_partial_tail_block`: its old key removed, the new one stored), when
    the checkpoint is the prompt's, one the retention keeps or the shared-prefix junction;
    else the block's key, if any, goes (the state there is transient). Returns the block and
    the checkpoint when it is keyed there (None otherwise)."""
    position, index = m._checkpoints[request.request_id]
    blk = m.req_to_blocks[request.request_id][index]
    pool = m.block_pool
    bs = m.block_size
    if not checkpoint_kept(m, request, position):
        pool._drop_hash(blk)
        return None
    j = position // bs - 1
    if j < 0 or blk.is_null or j >= len(request.block_hashes):
        return None
    key = resolve_block_hashes(request.block_hashes, pool.hash_block_size, bs)[j]
    if blk.block_hash != key or blk.hash_group != m.kv_cache_group_id:
        # the block keyed as the state after hash block j (its old key dropped on the way);
        # keyed there already, vLLM stores nothing again (no event)
        pool.cache_full_blocks(request, [pool.null_block] * j + [blk], j, j + 1, bs,
                               m.kv_cache_group_id)
    if blk.block_hash is None:
        return None
    m._cached_this_step.add(blk.block_hash)
    return blk, position


def checkpoint_kept(m: MambaManager, request: Request, position: int) -> bool:
    """Whether vLLM keeps the state of a checkpoint written at ``position`` keyed
    (`_cache_partial_tail_block`): the prompt's, one the retention interval keeps, or the
    shared-prefix junction; any other is transient (its slot is overwritten)."""
    of_prompt = position == checkpoint_position(request.num_prompt_tokens,
                                                m.cache_hit_alignment_tokens, m.replay_eagle)
    bs = m.block_size
    return (of_prompt or (position % bs == 0 and interval_keeps(m, position // bs - 1))
            or position == request.shared_prefix_boundary)


def interval_keeps(m: MambaManager, block: int) -> bool:
    """Whether the retention interval alone keeps the state at the end of ``block`` (vLLM's
    reachable_block_mask for that block without reachable boundaries)."""
    retention = m.retention_interval
    if retention is None:
        return True
    if retention == 0:
        return False
    per_segment = retention // m.block_size
    return per_segment <= 1 or (block + 1) % per_segment == 0
