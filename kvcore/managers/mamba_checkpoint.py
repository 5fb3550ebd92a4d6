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

from kvcore.specs import cdiv

if TYPE_CHECKING:
    from kvcore.managers.mamba import MambaManager


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
    (vLLM's _needs_internal_checkpoint, no speculative blocks)."""
    index = cdiv(end, m.block_size) - 2
    blocks = m.req_to_blocks.get(request_id, [])
    return (m.checkpoint_align > 0 and end >= prefill_end
            and checkpoint_fits(start, end, position, m.block_size, m.checkpoint_align,
                                m.block_pool.hash_block_size)
            and index >= 0 and (index >= len(blocks) or blocks[index].is_null))


def checkpoint_block(m: MambaManager, request_id: str, num_tokens: int,
                     total_computed_tokens: int, prefill_end: int,
                     apply_admission_cap: bool) -> int:
    """1 when the chunk writes its checkpoint (its last aligned position) from inside and so
    needs a block of its own; remembered for the allocation that follows (Mamba2 only)."""
    align = m.cache_hit_alignment_tokens
    position = max((num_tokens - 1) // align * align, 0)
    ckpt = 1 if checkpoint_needed(m, request_id, total_computed_tokens, num_tokens, position,
                                  prefill_end) else 0
    if not apply_admission_cap:
        if ckpt:
            m._checkpoints[request_id] = (position, cdiv(num_tokens, m.block_size) - 2)
        else:
            m._checkpoints.pop(request_id, None)
    return ckpt
