"""`PartialHashes`: a block held under several prefix-cache keys (vLLM 0.33's partial entries).

With `--prefix-match-unit N` finer than a block (partial hash hits: `kvcore.prefix_match`)
vLLM's `BlockPool` registers a prompt's last N-token boundary inside a block as a key of its
own (`cache_partial_block`), so a later request can hit inside the block. A block then has a
*primary* key (`KVCacheBlock.block_hash`, and the prefix length it stands for,
`block_hash_num_tokens`) and possibly *extra* keys (`cached_block_hashes_by_block`). Here:

* ``tokens[block_id]``: the primary key's prefix length when it is a partial entry (absent: a
  full block's key, whose length is the block's end, or no key);
* ``extras[block_id]``: the extra keys, in the order they were added.

Every key of a block goes at once, primary first (`remove_all`: vLLM's
`_remove_cached_block_hashes`), each announced as a `BlockRemoved`: when the block is handed out
again (`get_new_blocks`), promoted to a full block's key, re-keyed (`replace`), or evicted.
`move` re-points a block's keys to a private copy (a running producer's copy-on-write).

(vLLM keeps the extra keys in a set; with two or more extras on one block their removal order
is Python's set order. No block in the recorded cases or the random campaign held more than
one extra key.)

The pool hands its key-changing work to this object only when it has one (`BlockPool.partial`,
set by the coordinator when partial hash hits are on); the common path never comes here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.block import KVCacheBlock
from kvcore.hashing import (
    generate_block_hash_extra_keys,
    generate_lookahead_block_hash_extra_keys,
    to_event_extra_keys,
)
from kvcore.kv_events import BlockRemoved, BlockStored, hash_to_int

if TYPE_CHECKING:
    from kvcore.block_pool import BlockPool
    from kvcore.request import Request


class PartialHashes:
    def __init__(self, pool: BlockPool) -> None:
        self.pool = pool
        self.tokens: dict[int, int] = {}
        self.extras: dict[int, list[tuple[bytes, int]]] = {}

    def num_tokens(self, blk: KVCacheBlock, block_end: int) -> int:
        """vLLM's `block_hash_num_tokens` of a block sitting at a table position ending at
        ``block_end`` (a full block's key is that end); -1: the block has no key."""
        if blk.block_hash is None:
            return -1
        return self.tokens.get(blk.block_id, block_end)

    # --- keys ---------------------------------------------------------------------------
    def remove_all(self, blk: KVCacheBlock) -> list[tuple[bytes, int]]:
        """Drop every key of the block from the map, primary first; the ones that were there."""
        keys: list[tuple[bytes, int]] = []
        if blk.block_hash is not None:
            keys.append((blk.block_hash, blk.hash_group))
        bid = blk.block_id
        more = self.extras.pop(bid, None)
        if more:
            keys.extend(more)
        if not keys:
            return []
        cmap = self.pool.cached_block_hash_to_block
        removed = [(h, g) for h, g in keys if cmap.pop(h, g, bid) is not None]
        blk.block_hash = None
        blk.hash_group = -1
        self.tokens.pop(bid, None)
        return removed

    def announce_removed(self, blk: KVCacheBlock, removed: list[tuple[bytes, int]]) -> None:
        """`BlockRemoved` per key (vLLM's `_emit_block_removed_events`), and the tracer."""
        pool = self.pool
        if pool.enable_kv_cache_events:
            self._removed_events(removed)
        if pool.tracer is not None:
            for h, g in removed:
                pool.tracer.on_evict(g, blk.block_id, h)

    def _removed_events(self, removed: list[tuple[bytes, int]]) -> None:
        """One `BlockRemoved` per key, in order (events on)."""
        pool = self.pool
        if pool.lean_events:
            pool.lean_batch.removed += [h for h, _ in removed]
        else:
            pool.kv_event_queue.extend(
                [BlockRemoved(block_hashes=[hash_to_int(h)], medium=pool.medium, group_idx=g)
                 for h, g in removed])

    def evict(self, blk: KVCacheBlock) -> bool:
        """vLLM's `_maybe_evict_cached_block`: every key goes, each announced."""
        removed = self.remove_all(blk)
        if removed:
            self.announce_removed(blk, removed)
        return bool(removed)

    def insert(self, h: bytes, g: int, blk: KVCacheBlock, tokens: int) -> None:
        """vLLM's `_insert_block_hash`: the block's primary key if it has none (``tokens`` its
        prefix length, 0 for a full block's key), else an extra one."""
        if blk.block_hash == h and blk.hash_group == g:
            return
        cmap = self.pool.cached_block_hash_to_block
        bid = blk.block_id
        if cmap.contain(h, g, bid):
            return
        if blk.block_hash is None:
            blk.block_hash = h
            blk.hash_group = g
            if tokens:
                self.tokens[bid] = tokens
        else:
            self.extras.setdefault(bid, []).append((h, g))
        cmap.insert(h, g, blk)

    def cache_partial_block(self, request: Request, blk: KVCacheBlock, num_tokens: int,
                            group: int, block_end: int, replace: bool = False) -> bytes | None:
        """vLLM's `BlockPool.cache_partial_block`: key the block (at a table position ending at
        ``block_end``) under the request's hash of its first ``num_tokens`` tokens; with
        ``replace`` its old keys go first (its contents changed). The key, or None for a null
        block. A key it did not hold is announced in a `BlockStored` of that one hash unit."""
        if blk.is_null:
            return None
        pool = self.pool
        hbs = pool.hash_block_size
        n = num_tokens // hbs
        h = request.block_hashes[n - 1]
        bid = blk.block_id
        cached = (blk.block_hash == h and blk.hash_group == group) or \
            pool.cached_block_hash_to_block.contain(h, group, bid)
        if replace:
            self.evict(blk)
            cached = False
        elif not cached and blk.block_hash is not None and \
                self.num_tokens(blk, block_end) < n * hbs:
            self.evict(blk)
        self.insert(h, group, blk, n * hbs)
        if not cached:
            if pool.tracer is not None:
                pool.tracer.on_cache(group, [blk.id_obj], [h])
            if pool.enable_kv_cache_events:
                if pool.lean_events:
                    pool.lean_batch.stored.append(h)
                else:
                    pool.kv_event_queue.append(self._stored(request, h, n, group))
        return h

    def _stored(self, request: Request, h: bytes, n: int, group: int) -> BlockStored:
        hbs = self.pool.hash_block_size
        start, end = (n - 1) * hbs, n * hbs
        # (with EAGLE's lookahead hashes the keys cover the unit's next token too, which the
        # event lists, as `kvcore.kv_events.block_stored_event` does for whole blocks)
        ahead = getattr(request._block_hasher, "lookahead", False)
        if ahead:
            keys, _ = generate_lookahead_block_hash_extra_keys(request, start, end, 0)
        else:
            keys, _ = generate_block_hash_extra_keys(request, start, end, 0)
        lora = request.lora_request
        return BlockStored(
            block_hashes=[hash_to_int(h)],
            parent_block_hash=hash_to_int(request.block_hashes[n - 2]) if n > 1 else None,
            token_ids=request.token_ids(start, end), block_size=end - start,
            lora_id=lora.lora_int_id if lora is not None else None, medium=self.pool.medium,
            lora_name=lora.lora_name if lora is not None else None,
            extra_keys=to_event_extra_keys([keys]), group_idx=group,
            session_id=request.session_id,
            lookahead_token_ids=[request.token_ids(end, end + 1)] if ahead else None)

    def move(self, src: KVCacheBlock, dst: KVCacheBlock) -> None:
        """vLLM's `move_block_hashes`: ``src``'s keys now lead to ``dst`` (no event)."""
        assert dst.block_hash is None and dst.block_id not in self.extras
        tokens = self.tokens.get(src.block_id, 0)
        for h, g in self.remove_all(src):
            self.insert(h, g, dst, tokens)   # (the length applies to the first, the primary)

    # --- the pool's calls that drop keys --------------------------------------------------
    def get_new_blocks(self, num_blocks: int) -> list[KVCacheBlock]:
        """`BlockPool.get_new_blocks` with every key of each reused block dropped in turn."""
        pool = self.pool
        ret = pool.free_block_queue.popleft_n(num_blocks)
        tracer = pool.tracer
        events = pool.enable_kv_cache_events
        ev: list[tuple[bytes, int]] = []
        ids: list[int] = []
        for blk in ret:
            removed = self.remove_all(blk)
            if removed and events:
                self._removed_events(removed)
            if tracer is not None:
                ev += removed
                ids += [blk.id_obj] * len(removed)
            blk.ref_cnt = 1
        if tracer is not None and ev:
            tracer.on_evict_many([g for _, g in ev], ids, [h for h, _ in ev])
        return ret

    def reset(self) -> None:
        self.tokens.clear()
        self.extras.clear()
