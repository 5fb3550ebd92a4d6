"""A block's key into the prefix cache and out of it: the caching half of `BlockPool`.

vLLM's `BlockPool.cache_full_blocks` (0.33: a request's full blocks registered under its hashes,
one `BlockStored` a call) and the drop of one block's key (`_drop_hash`: a cached block re-keyed,
`evict_blocks`), each announced to the tracer and the event queue. Module-level functions the
pool's methods call (a mixin across compiled modules may not work under mypyc); the free queue's
half, and the eviction `get_new_blocks` inlines into its pops, stay in `block_pool.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.block import KVCacheBlock
from kvcore.errors import past_the_table
from kvcore.hashing import resolve_block_hashes
from kvcore.kv_events import BlockRemoved, block_stored_event, hash_to_int

if TYPE_CHECKING:
    from kvcore.block_pool import BlockPool
    from kvcore.request import Request


def cache_blocks(pool: BlockPool, request: Request, blocks: list[KVCacheBlock],
                 num_cached_blocks: int, num_full_blocks: int, block_size: int,
                 kv_cache_group_id: int, block_mask: list[bool] | None = None) -> None:
    """`BlockPool.cache_full_blocks`: register ``blocks[num_cached_blocks:num_full_blocks]``
    under the request's hashes (null blocks and those the mask leaves out skipped); with events
    on, one `BlockStored` covers the call. As vLLM's slice, a shorter table (an op script's
    request past max_model_len) caches what it holds, unless vLLM fails on it (events on:
    IndexError; a window's mask longer than the slice: its assert): kvcli stops there, in one
    line."""
    if num_cached_blocks >= num_full_blocks:
        return
    end = min(num_full_blocks, len(blocks))
    if end < num_full_blocks and (pool.enable_kv_cache_events or block_mask is not None
                                  and len(block_mask) != end - num_cached_blocks):
        raise past_the_table(request.num_tokens, num_full_blocks, len(blocks),
                             pool.enable_kv_cache_events)
    hashes = resolve_block_hashes(request.block_hashes, pool.hash_block_size, block_size)
    # A list indexed as one (generic `hashes[i]`: 1.1% of a conversation replay); another
    # block size's view is read into one from `num_cached_blocks` on (`off`).
    if isinstance(hashes, list):
        hl: list[bytes] = hashes
        off = 0
    else:
        hl = [hashes[i] for i in range(num_cached_blocks, end)]
        off = num_cached_blocks
    group = kv_cache_group_id
    cmap = pool.cached_block_hash_to_block.group_map(group)
    setdefault = cmap.setdefault
    events = pool.enable_kv_cache_events
    tracer = pool.tracer
    stored: list[KVCacheBlock] | None = [] if (events or tracer is not None) else None
    watch = pool.lookup_watch
    for i in range(num_cached_blocks, end):
        blk = blocks[i]
        if blk.is_null or (block_mask is not None and not block_mask[i - num_cached_blocks]):
            continue
        h = hl[i - off]
        if blk.block_hash is not None:
            if blk.block_hash == h and blk.hash_group == group:
                continue
            drop_hash(pool, blk)
        if watch is not None and h in watch:
            pool.lookup_watch = watch = None
        blk.block_hash = h
        blk.hash_group = group
        # The map's `insert`, inlined (one setdefault when the key is new): calling insert
        # costs +17% of the manager's instructions on the `kvcli bench` workload.
        v = setdefault(h, blk)
        if v is not blk:
            if type(v) is KVCacheBlock:
                cmap[h] = {v.block_id: v, blk.block_id: blk}
            else:
                v[blk.block_id] = blk
        if stored is not None:
            stored.append(blk)
    if stored is None:          # no events, no tracer: nobody to tell
        return
    hs: list[bytes] = [b.block_hash for b in stored]  # type: ignore[misc]  # all just set
    if tracer is not None and stored:
        tracer.on_cache(group, [b.id_obj for b in stored], hs)
    if events and pool.lean_events:
        # Only the hashes, for a cluster's index (`kvcore/lean_events.py`: why its counts
        # stay the same): no token ids, no extra keys, no event objects. 8 replicas behind
        # llmd_precise, first 3,000 conversation requests, compiled: 11.8 -> 8.3 s.
        pool.lean_batch.stored += hs
    elif events:
        # vLLM publishes the call's BlockStored even when every block was null or masked
        # out (a sparse-retention sliding group's decode block: empty block_hashes).
        pool.kv_event_queue.append(block_stored_event(
            request, blocks, hashes, hs, num_cached_blocks, num_full_blocks, block_size,
            group, block_mask, pool.medium))


def drop_hash(pool: BlockPool, blk: KVCacheBlock) -> bool:
    """`BlockPool._drop_hash`: remove the block's key from the map (if it is there), clear its
    hash, report it."""
    if pool.partial is not None:
        return pool.partial.evict(blk)
    h, g = blk.block_hash, blk.hash_group
    if h is None:
        return False
    removed = pool.cached_block_hash_to_block.pop(h, g, blk.block_id) is not None
    if pool.lookup_watch is not None and h in pool.lookup_watch:
        pool.lookup_watch = None
    blk.block_hash = None
    blk.hash_group = -1
    if removed:
        if pool.enable_kv_cache_events and pool.lean_events:
            pool.lean_batch.removed.append(h)
        elif pool.enable_kv_cache_events:
            pool.kv_event_queue.append(BlockRemoved(block_hashes=[hash_to_int(h)],
                                                    medium=pool.medium, group_idx=g))
        if pool.tracer is not None:
            pool.tracer.on_evict(g, blk.block_id, h)
    return removed
