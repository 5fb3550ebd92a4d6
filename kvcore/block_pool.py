"""`BlockPool`: every block of the KV cache, the free queue, and the prefix-cache map.

vLLM's `vllm/v1/core/block_pool.py` (0.33). All KV cache groups draw block ids from this one
pool. Block 0 is popped at construction and becomes the null block, so a pool of N blocks has
N-1 usable blocks and `get_usage` divides by N-1.

The prefix cache is lazy: a freed block keeps its hash and goes back on the free queue, still
hittable. Its hash is dropped only when `get_new_blocks` hands the block out again (that is the
eviction, and the moment `BlockRemoved` is emitted), or through `evict_blocks` / a reset.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from kvcore.block import KVCacheBlock
from kvcore.free_queue import FreeKVCacheBlockQueue
from kvcore.hashing import generate_block_hash_extra_keys, resolve_block_hashes, to_event_extra_keys
from kvcore.kv_events import (
    MEDIUM_GPU,
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    KVCacheEvent,
    hash_to_int,
)

if TYPE_CHECKING:
    from kvcore.request import Request
    from kvcore.tracing import BlockTracer


class BlockHashToBlockMap:
    """The prefix-cache map: (block hash, group id) -> block, several blocks allowed per key.

    Blocks with identical content are never deduplicated (block tables stay append-only), so a
    key may hold several blocks. As in vLLM a key maps to the block itself, or to a dict
    ``{block_id: block}`` (insertion ordered) once a second block arrives; a lookup returns the
    first. Keys are kept in one dict per group (same key space as vLLM's hash+group bytes,
    without building the concatenation on every lookup).
    """

    __slots__ = ("_maps",)

    def __init__(self, num_groups: int = 1) -> None:
        self._maps: list[dict[bytes, KVCacheBlock | dict[int, KVCacheBlock]]] = [
            {} for _ in range(max(1, num_groups))]

    def group_map(self, group: int) -> dict:
        maps = self._maps
        while group >= len(maps):
            maps.append({})
        return maps[group]

    def get_one_block(self, block_hash: bytes, group: int) -> KVCacheBlock | None:
        v = self.group_map(group).get(block_hash)
        if v is None or v.__class__ is KVCacheBlock:
            return v  # type: ignore[return-value]
        return next(iter(v.values()))

    def contain(self, block_hash: bytes, group: int, block_id: int) -> bool:
        v = self.group_map(group).get(block_hash)
        if v is None:
            return False
        if v.__class__ is KVCacheBlock:
            return v.block_id == block_id
        return block_id in v

    def insert(self, block_hash: bytes, group: int, block: KVCacheBlock) -> None:
        m = self.group_map(group)
        v = m.get(block_hash)
        if v is None:
            m[block_hash] = block
        elif v.__class__ is KVCacheBlock:
            m[block_hash] = {v.block_id: v, block.block_id: block}
        else:
            v[block.block_id] = block

    def pop(self, block_hash: bytes, group: int, block_id: int) -> KVCacheBlock | None:
        """Remove ``block_id`` from the key; None (and nothing changes) if it is not there."""
        m = self.group_map(group)
        v = m.get(block_hash)
        if v is None:
            return None
        if v.__class__ is KVCacheBlock:
            if v.block_id == block_id:
                del m[block_hash]
                return v
            return None
        blk = v.pop(block_id, None)
        if not v:
            del m[block_hash]
        return blk

    def __len__(self) -> int:
        return sum(len(m) for m in self._maps)

    def items(self) -> Iterator[tuple[bytes, int, list[KVCacheBlock]]]:
        """Every key as ``(hash, group, blocks)`` (tests, invariants)."""
        for g, m in enumerate(self._maps):
            for h, v in m.items():
                yield h, g, ([v] if v.__class__ is KVCacheBlock else list(v.values()))


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
        self.tracer = tracer

    # --- lookup -----------------------------------------------------------------------
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

    # --- caching ----------------------------------------------------------------------
    def cache_full_blocks(self, request: Request, blocks: list[KVCacheBlock],
                          num_cached_blocks: int, num_full_blocks: int, block_size: int,
                          kv_cache_group_id: int, block_mask: list[bool] | None = None) -> None:
        """Register ``blocks[num_cached_blocks:num_full_blocks]`` under the request's hashes.

        Null blocks (and blocks the mask leaves out) are skipped. With events on, one
        `BlockStored` covers the whole call.
        """
        if num_cached_blocks >= num_full_blocks:
            return
        hashes = resolve_block_hashes(request.block_hashes, self.hash_block_size, block_size)
        group = kv_cache_group_id
        cmap = self.cached_block_hash_to_block.group_map(group)
        events = self.enable_kv_cache_events
        tracer = self.tracer
        stored: list[KVCacheBlock] | None = [] if (events or tracer is not None) else None
        if not events and block_mask is None:
            # Fast path (no events or mask): the loop below without its bookkeeping; with a
            # tracer, the stored blocks' ids and hashes are collected on the way.
            setdefault = cmap.setdefault
            ids: list[int] | None = [] if stored is not None else None
            hs: list[bytes] = []
            for blk, h in zip(blocks[num_cached_blocks:num_full_blocks],
                              hashes[num_cached_blocks:num_full_blocks]):
                if blk.is_null:
                    continue
                if blk.block_hash is not None:
                    if blk.block_hash == h and blk.hash_group == group:
                        continue
                    self._drop_hash(blk)
                blk.block_hash = h
                blk.hash_group = group
                v = setdefault(h, blk)
                if v is not blk:
                    if v.__class__ is KVCacheBlock:
                        cmap[h] = {v.block_id: v, blk.block_id: blk}
                    else:
                        v[blk.block_id] = blk
                if ids is not None:
                    ids.append(blk.block_id)
                    hs.append(h)
            if ids:
                tracer.on_cache(group, ids, hs)  # type: ignore[union-attr]
            return
        for i in range(num_cached_blocks, num_full_blocks):
            blk = blocks[i]
            if blk.is_null or (block_mask is not None and not block_mask[i - num_cached_blocks]):
                continue
            h = hashes[i]
            if blk.block_hash is not None:
                if blk.block_hash == h and blk.hash_group == group:
                    continue
                self._drop_hash(blk)
            blk.block_hash = h
            blk.hash_group = group
            v = cmap.get(h)
            if v is None:
                cmap[h] = blk
            elif v.__class__ is KVCacheBlock:
                cmap[h] = {v.block_id: v, blk.block_id: blk}
            else:
                v[blk.block_id] = blk
            if stored is not None:
                stored.append(blk)
        if tracer is not None and stored:
            tracer.on_cache(group, [b.block_id for b in stored], [b.block_hash for b in stored])
        if events:
            extra: list = []
            mm_idx = 0
            for i in range(num_cached_blocks, num_full_blocks):
                if blocks[i].is_null or (block_mask is not None
                                         and not block_mask[i - num_cached_blocks]):
                    continue
                start = i * block_size
                keys, mm_idx = generate_block_hash_extra_keys(request, start, start + block_size,
                                                              mm_idx)
                extra.append(keys)
            lora = request.lora_request
            self.kv_event_queue.append(BlockStored(
                block_hashes=[hash_to_int(b.block_hash) for b in stored],  # type: ignore[arg-type]
                parent_block_hash=(hash_to_int(hashes[num_cached_blocks - 1])
                                   if num_cached_blocks > 0 else None),
                token_ids=request.all_token_ids[num_cached_blocks * block_size:
                                                num_full_blocks * block_size],
                block_size=block_size,
                lora_id=lora.lora_int_id if lora is not None else None,
                medium=self.medium,
                lora_name=lora.lora_name if lora is not None else None,
                extra_keys=to_event_extra_keys(extra),
                group_idx=group,
                session_id=request.session_id,
            ))

    # --- allocation -------------------------------------------------------------------
    def get_new_blocks(self, num_blocks: int) -> list[KVCacheBlock]:
        """Pop ``num_blocks`` from the front of the free queue; evict their cached hashes."""
        q = self.free_block_queue
        if num_blocks > q.num_free_blocks:
            raise ValueError(f"Cannot get {num_blocks} free blocks from the pool")
        tracer = self.tracer
        if not self.enable_caching or self.enable_kv_cache_events or (
                tracer is not None and not hasattr(tracer, "on_evict_many")):
            ret = q.popleft_n(num_blocks)
            for blk in ret:
                if blk.block_hash is not None and self.enable_caching:
                    self._drop_hash(blk)  # lazy eviction happens here
                blk.ref_cnt = 1
            return ret
        # The same, with popleft_n and the map's pop inlined (the hottest loop of all). A
        # tracer with the batch form `on_evict_many(groups, block_ids, hashes)` hears of all
        # this call's evictions at once, in eviction order (the same calls `on_evict` would get).
        evicted: list[int] | None = [] if tracer is not None else None
        ev_hashes: list[bytes] = []
        ev_groups: list[int] = []
        maps = self.cached_block_hash_to_block._maps
        head = q.fake_free_list_head
        blk = head.next_free_block
        ret = [None] * num_blocks
        for i in range(num_blocks):
            ret[i] = blk
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
                if removed and evicted is not None:
                    evicted.append(blk.block_id)
                    ev_hashes.append(h)
                    ev_groups.append(g)
            blk.ref_cnt = 1
            blk = nxt
        head.next_free_block = blk
        blk.prev_free_block = head
        q.num_free_blocks -= num_blocks
        if evicted:
            tracer.on_evict_many(ev_groups, evicted, ev_hashes)  # type: ignore[union-attr]
        return ret  # type: ignore[return-value]

    def _drop_hash(self, blk: KVCacheBlock) -> bool:
        """Remove the block's key from the map (if it is there), clear its hash, report it."""
        h, g = blk.block_hash, blk.hash_group
        if h is None:
            return False
        removed = self.cached_block_hash_to_block.pop(h, g, blk.block_id) is not None
        blk.block_hash = None
        blk.hash_group = -1
        if removed:
            if self.enable_kv_cache_events:
                self.kv_event_queue.append(BlockRemoved(block_hashes=[hash_to_int(h)],
                                                        medium=self.medium, group_idx=g))
            if self.tracer is not None:
                self.tracer.on_evict(g, blk.block_id, h)
        return removed

    def touch(self, blocks: Iterable[KVCacheBlock]) -> None:
        """Take a reference on hit blocks; a free one leaves the queue (no longer evictable)."""
        q = self.free_block_queue
        n_removed = 0
        for blk in blocks:
            if blk.is_null:
                continue
            if blk.ref_cnt == 0:
                # Unlink from the free queue (its remove(), inlined).
                prev, nxt = blk.prev_free_block, blk.next_free_block
                if prev is None or nxt is None:
                    raise RuntimeError(f"touch: block {blk.block_id} is not in the free queue")
                prev.next_free_block = nxt
                nxt.prev_free_block = prev
                blk.prev_free_block = blk.next_free_block = None
                n_removed += 1
            blk.ref_cnt += 1
        q.num_free_blocks -= n_removed

    def free_blocks(self, ordered_blocks: Iterable[KVCacheBlock]) -> None:
        """Drop one reference from each block; the first given is the first to be evicted.

        0.33: blocks reaching 0 without a hash are *prepended* (scratch, reused first, "LIFO
        for GPU locality"); hashed ones are *appended* (evicted last, which gives LRU).
        """
        # Build the two chains while walking (no intermediate lists), then splice the
        # unhashed chain in at the front and the hashed chain at the back of the queue.
        caching = self.enable_caching
        first_head = first_last = last_head = last_last = None
        n_first = n_last = 0
        for blk in ordered_blocks:
            if blk.is_null:
                continue
            rc = blk.ref_cnt - 1
            blk.ref_cnt = rc
            if rc:
                continue
            if blk.block_hash is None or not caching:
                if first_last is None:
                    first_head = blk
                else:
                    first_last.next_free_block = blk
                    blk.prev_free_block = first_last
                first_last = blk
                n_first += 1
            else:
                if last_last is None:
                    last_head = blk
                else:
                    last_last.next_free_block = blk
                    blk.prev_free_block = last_last
                last_last = blk
                n_last += 1
        q = self.free_block_queue
        if first_head is not None:
            head = q.fake_free_list_head
            old = head.next_free_block
            head.next_free_block = first_head
            first_head.prev_free_block = head
            first_last.next_free_block = old  # type: ignore[union-attr]
            old.prev_free_block = first_last  # type: ignore[union-attr]
        if last_head is not None:
            tail = q.fake_free_list_tail
            old = tail.prev_free_block
            old.next_free_block = last_head  # type: ignore[union-attr]
            last_head.prev_free_block = old
            last_last.next_free_block = tail  # type: ignore[union-attr]
            tail.prev_free_block = last_last
        q.num_free_blocks += n_first + n_last

    def evict_blocks(self, block_ids: Iterable[int]) -> None:
        """Drop these blocks' hashes from the prefix cache (ref counts and queue untouched)."""
        for bid in block_ids:
            assert 0 <= bid < len(self.blocks), f"invalid block id {bid}"
            self._drop_hash(self.blocks[bid])

    def reset_prefix_cache(self) -> bool:
        """Forget every cached hash; only possible when no request holds a block."""
        if self.num_gpu_blocks - self.get_num_free_blocks() != 1:
            return False
        tracer = self.tracer
        if tracer is not None:
            for h, g, blks in list(self.cached_block_hash_to_block.items()):
                for b in blks:
                    tracer.on_evict(g, b.block_id, h)
        self.cached_block_hash_to_block = BlockHashToBlockMap(
            len(self.cached_block_hash_to_block._maps))
        for blk in self.blocks:
            blk.block_hash = None
            blk.hash_group = -1
        if self.enable_kv_cache_events:
            self.kv_event_queue.append(AllBlocksCleared())
        return True

    # --- state ------------------------------------------------------------------------
    def get_num_free_blocks(self) -> int:
        """Free blocks, including cached ones no request holds (they are evictable)."""
        return self.free_block_queue.num_free_blocks

    def get_usage(self) -> float:
        total = self.num_gpu_blocks - 1
        if not total:
            return 0
        return 1.0 - (self.free_block_queue.num_free_blocks / total)

    def take_events(self) -> list[KVCacheEvent]:
        if not self.enable_kv_cache_events:
            return []
        events, self.kv_event_queue = self.kv_event_queue, []
        return events
