"""vLLM's `BlockPool.reset_prefix_cache` (0.33): every cached hash forgotten at once.

Refused (False) while a request holds a block: only the null block may be out of the free queue.
Each cached block is announced evicted to the tracer, a kept lookup (`kvcore.lookup_memo`) is
dropped, and one `AllBlocksCleared` (a lean batch marked cleared, for a cluster's index) stands
for every removal. Kept out of `block_pool.py`: a rare call beside the pool's hot paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.block_hash_map import BlockHashToBlockMap
from kvcore.kv_events import AllBlocksCleared
from kvcore.lean_events import LeanBatch

if TYPE_CHECKING:
    from kvcore.block_pool import BlockPool


def reset_prefix_cache(pool: BlockPool) -> bool:
    """Forget every cached hash of ``pool``; False (nothing done) while a request holds a block."""
    if pool.num_gpu_blocks - pool.get_num_free_blocks() != 1:
        return False
    tracer = pool.tracer
    if tracer is not None:
        for h, g, blks in list(pool.cached_block_hash_to_block.items()):
            for b in blks:
                tracer.on_evict(g, b.block_id, h)
    pool.lookup_watch = None
    pool.cached_block_hash_to_block = BlockHashToBlockMap(
        pool.cached_block_hash_to_block.num_groups)
    for blk in pool.blocks:
        blk.block_hash = None
        blk.hash_group = -1
    if pool.partial is not None:
        pool.partial.reset()
    if pool.enable_kv_cache_events and pool.lean_events:
        pool.lean_batch = LeanBatch(cleared=True)
    elif pool.enable_kv_cache_events:
        pool.kv_event_queue.append(AllBlocksCleared())
    return True
