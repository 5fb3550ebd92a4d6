"""`BlockPool`: every block of the KV cache, the free queue, and the prefix-cache map.

vLLM's `vllm/v1/core/block_pool.py` (0.33). All KV cache groups draw block ids from this one
pool. Block 0 is popped at construction and becomes the null block, so a pool of N blocks has
N-1 usable blocks and `get_usage` divides by N-1.

The prefix cache is lazy: a freed block keeps its hash and goes back on the free queue, still
hittable. Its hash is dropped when `get_new_blocks` hands the block out again (the eviction,
when `BlockRemoved` is emitted), by `evict_blocks` / a reset, and a partial key's when
`cache_full_blocks` fills its block. Registering and dropping a block's key (`cache_full_blocks`,
`_drop_hash`) is `kvcore.block_caching`'s; the pops, the eviction they inline, and the frees
are here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from kvcore.block import KVCacheBlock
from kvcore.block_caching import cache_blocks, drop_hash
from kvcore.block_hash_map import BlockHashToBlockMap
from kvcore.free_queue import FreeKVCacheBlockQueue, FreeLists
from kvcore.kv_events import MEDIUM_GPU, KVCacheEvent, removed_events
from kvcore.lean_events import LeanBatch
from kvcore.partial_hashes import PartialHashes
from kvcore.prefix_cache_reset import reset_prefix_cache

if TYPE_CHECKING:
    from kvcore.request import Request
    from kvcore.tracing import BlockTracer

__all__ = ["BlockHashToBlockMap", "BlockPool"]


class BlockPool:
    """Allocates, frees and caches blocks. Constructor as vLLM's, plus an optional tracer."""

    def __init__(self, num_gpu_blocks: int, enable_caching: bool, hash_block_size: int,
                 enable_kv_cache_events: bool = False, tracer: BlockTracer | None = None,
                 num_groups: int = 1) -> None:
        assert isinstance(num_gpu_blocks, int) and num_gpu_blocks > 0
        self.num_gpu_blocks = num_gpu_blocks
        self.enable_caching = enable_caching
        self.hash_block_size = hash_block_size
        self.medium = MEDIUM_GPU
        self.blocks = [KVCacheBlock(i) for i in range(num_gpu_blocks)]
        self.free_block_queue = FreeKVCacheBlockQueue(self.blocks)
        self.cached_block_hash_to_block = BlockHashToBlockMap(num_groups)
        # Block 0 never returns to the free queue; its ref count is not maintained.
        self.null_block = self.free_block_queue.popleft()
        self.null_block.is_null = True
        self.enable_kv_cache_events = enable_kv_cache_events
        self.kv_event_queue: list[KVCacheEvent] = []
        # `lean_events`: only hashes queued (a cluster's router index: `kvcore/lean_events.py`)
        self.lean_events = False
        self.lean_batch = LeanBatch()
        self.partial: PartialHashes | None = None   # several keys a block: partial_hashes.py
        # hashes a kept lookup read (`kvcore.lookup_memo`): a cache or eviction under one drops it
        self.lookup_watch: set[bytes] | None = None
        self.tracer = tracer
        if tracer is not None:
            tracer.attach(self)

    def get_cached_block(self, block_hash: bytes, kv_cache_group_ids: Sequence[int]
                         ) -> list[KVCacheBlock] | None:
        """One cached block per group for this hash, or None if any group misses."""
        out = []
        for g in kv_cache_group_ids:
            blk = self.cached_block_hash_to_block.get_one_block(block_hash, g)
            if blk is None:
                return None
            out.append(blk)
        return out

    def cache_full_blocks(self, request: Request, blocks: list[KVCacheBlock],
                          num_cached_blocks: int, num_full_blocks: int, block_size: int,
                          kv_cache_group_id: int, block_mask: list[bool] | None = None) -> None:
        """Register ``blocks[num_cached_blocks:num_full_blocks]`` under the request's hashes
        (`kvcore.block_caching.cache_blocks`)."""
        cache_blocks(self, request, blocks, num_cached_blocks, num_full_blocks, block_size,
                     kv_cache_group_id, block_mask)

    def get_new_blocks(self, num_blocks: int) -> list[KVCacheBlock]:
        """Pop ``num_blocks`` from the front of the free queue; evict their cached hashes.
        The tracer hears of this call's evictions in one `on_evict_many`, in eviction order;
        with events on, one `BlockRemoved` per evicted key follows in the same order."""
        q = self.free_block_queue
        if num_blocks > q.num_free_blocks:
            raise ValueError(f"Cannot get {num_blocks} free blocks from the pool")
        if not self.enable_caching:
            fresh = q.popleft_n(num_blocks)
            for b in fresh:
                b.ref_cnt = 1
            return fresh
        if self.partial is not None:
            return self.partial.get_new_blocks(num_blocks)
        tracer = self.tracer
        events = self.enable_kv_cache_events
        evicted: list[int] | None = [] if (tracer is not None or events) else None
        ev_hashes: list[bytes] = []
        ev_groups: list[int] = []
        maps = self.cached_block_hash_to_block.by_group
        watch = self.lookup_watch
        # One pass: pop (the queue's `popleft_n`), evict (`_drop_hash`, the map's `pop`) and
        # reference, inlined: without it the manager runs +20% instructions on `kvcli bench`.
        head = q.fake_free_list_head
        # Typed, not Any: the compiled build reads the block's fields directly (py-spy: generic
        # getters were 5% of 3,000 conversation requests with events; 7.56 -> 7.1 s CPU).
        nxt: KVCacheBlock | None = head.next_free_block
        ret: list[KVCacheBlock] = []
        for _ in range(num_blocks):
            assert nxt is not None     # links inside the queue are never None (sentinels end it)
            blk = nxt
            ret.append(blk)
            nxt = blk.next_free_block
            blk.prev_free_block = blk.next_free_block = None
            h = blk.block_hash
            if h is not None:
                g = blk.hash_group
                m = maps[g]
                v = m.pop(h, None)
                removed = v is blk
                if not removed and v is not None:
                    # Several blocks under this key (or another block): keep the others.
                    if v.__class__ is dict:
                        removed = v.pop(blk.block_id, None) is not None
                        if v:
                            m[h] = v
                    else:
                        m[h] = v
                blk.block_hash = None
                blk.hash_group = -1
                if watch is not None and h in watch:
                    self.lookup_watch = watch = None
                if removed and evicted is not None:
                    evicted.append(blk.id_obj)
                    ev_hashes.append(h)
                    ev_groups.append(g)
            blk.ref_cnt = 1
        assert nxt is not None
        head.next_free_block = nxt
        nxt.prev_free_block = head
        q.num_free_blocks -= num_blocks
        if evicted:
            if events and self.lean_events:
                self.lean_batch.removed += ev_hashes
            elif events:
                self.kv_event_queue.extend(removed_events(ev_hashes, ev_groups, self.medium))
            if tracer is not None:
                tracer.on_evict_many(ev_groups, evicted, ev_hashes)
        return ret

    def _drop_hash(self, blk: KVCacheBlock) -> bool:
        """Remove the block's key from the map (if it is there), clear its hash, report it
        (`kvcore.block_caching.drop_hash`)."""
        return drop_hash(self, blk)

    def touch(self, blocks: Iterable[KVCacheBlock]) -> None:
        """Take a reference on hit blocks; a free one leaves the queue (no longer evictable).
        (One `remove_n` call: a `remove` per block costs +1% of `kvcli bench`'s instructions.)"""
        idle = []
        for blk in blocks:
            if blk.is_null:
                continue
            if blk.ref_cnt == 0:
                idle.append(blk)
            blk.ref_cnt += 1
        if idle:
            self.free_block_queue.remove_n(idle)

    def free_blocks(self, ordered_blocks: Iterable[KVCacheBlock],
                    trace: FreeLists | None = None) -> None:
        """Drop one reference from each block, the first given evicted first. 0.33: blocks at 0
        without a hash are *prepended* (reused first), hashed ones *appended* (LRU). ``trace``:
        the tracer's `on_free` lists, filled on the way (`FreeKVCacheBlockQueue.release`)."""
        self.free_block_queue.release(ordered_blocks, self.enable_caching, trace)

    def evict_blocks(self, block_ids: Iterable[int]) -> None:
        """Drop these blocks' hashes from the prefix cache (ref counts and queue untouched)."""
        for bid in block_ids:
            assert 0 <= bid < len(self.blocks), f"invalid block id {bid}"
            self._drop_hash(self.blocks[bid])

    def reset_prefix_cache(self) -> bool:
        """Forget every cached hash; only possible when no request holds a block
        (`kvcore.prefix_cache_reset`)."""
        return reset_prefix_cache(self)

    def get_num_free_blocks(self) -> int:
        """Free blocks, including cached ones no request holds (they are evictable)."""
        return self.free_block_queue.num_free_blocks

    def get_usage(self) -> float:
        total = self.num_gpu_blocks - 1
        return 1.0 - (self.free_block_queue.num_free_blocks / total) if total else 0

    def take_events(self) -> list[KVCacheEvent]:
        if not self.enable_kv_cache_events:
            return []
        if self.lean_events:    # the step's batch; none if it changes no count
            batch, self.lean_batch = self.lean_batch, LeanBatch()
            return [batch] if batch else []
        events, self.kv_event_queue = self.kv_event_queue, []
        return events

