"""A Mamba group's caching at the end of a step (`MambaManager.cache_blocks`, vLLM 0.33's align
mode): which of the blocks a step filled hold a state worth a key, the rest passed over.

A block's state is cached only when it ends exactly on the block's end (the running state when
the computed tokens are a multiple of the block size, a Mamba2 checkpoint's block, a state a
connector loaded), and, under `prefix_cache_retention_interval`, only where a later hit can
start from it (`kvcore.managers.mamba_retention`). The states cached are remembered for the
rest of the schedule() (the worker has not written them yet: a hit on one waits) and, with a
CPU tier, offered to it with the position each ends at (``state_offers``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.managers.mamba_checkpoint import cache_checkpoint_below

if TYPE_CHECKING:
    from kvcore.managers.mamba import MambaManager


def cache_states(m: MambaManager, request, num_tokens: int) -> None:
    """Register only a state that sits exactly on its block's end, and (vLLM 0.33's
    prefix_cache_retention_interval, default 0) only one a later hit can reach.

    The running state lives in block ``cdiv(n, bs) - 1``; it is the state of a whole block
    only when ``n`` is a multiple of the block size. vLLM's scheduler keeps align-mode
    prefill chunks block-aligned so this always holds there; an op script may prefill
    unaligned chunks, and then the blocks it passed over hold no reusable state.
    """
    rid = request.request_id
    num_cached = m.num_cached_block.get(rid, 0)
    num_full = min(num_tokens, len(request.block_hashes) * m.block_pool.hash_block_size
                   ) // m.block_size
    checkpoint = m._checkpoints.get(rid)
    # (EAGLE's legacy drop writes the checkpoint a block below its block's end)
    below = checkpoint is not None and checkpoint[0] != (checkpoint[1] + 1) * m.block_size
    if num_cached >= num_full:
        if below:
            cache_checkpoint_below(m, request)
        return
    mask = [False] * (num_full - num_cached)
    reach = m.reachable_block_mask(num_cached, num_full, request)
    if num_tokens % m.block_size == 0 and num_full == num_tokens // m.block_size:
        mask[-1] = reach is None or reach[-1]
    if checkpoint is not None and not below and num_cached <= checkpoint[1] < num_full:
        # The block reserved for a checkpoint written inside this chunk holds the state at
        # its own end (with the hash block = the block, vLLM's partial-block re-keying of
        # it adds nothing to this; a checkpoint it would not keep has no hash to drop).
        i = checkpoint[1] - num_cached
        mask[i] = reach is None or reach[i]
    loaded = m._loaded.get(rid)
    if loaded is not None and loaded < num_full:
        del m._loaded[rid]
        if loaded >= num_cached:
            mask[loaded - num_cached] = reach is None or reach[loaded - num_cached]
    blocks = m.req_to_blocks[rid]
    m.block_pool.cache_full_blocks(request, blocks, num_cached, num_full, m.block_size,
                                   m.kv_cache_group_id, mask)
    m.num_cached_block[rid] = num_full
    # (re-keyed before the hand-off, as vLLM's `_cache_partial_tail_block` runs first: the
    # CPU tier is offered the checkpoint's block at the checkpoint, a block below its end)
    rekeyed = cache_checkpoint_below(m, request) if below else None
    offers = m.state_offers
    bs = m.block_size
    for i in range(num_cached, num_full):
        h = blocks[i].block_hash
        if h is not None and not blocks[i].is_null:
            m._cached_this_step.add(h)
            if offers is not None:
                at = rekeyed[1] if rekeyed is not None and rekeyed[0] is blocks[i] \
                    else (i + 1) * bs
                offers.append((rid, blocks[i], at))
