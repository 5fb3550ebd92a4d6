"""The free block queue: a doubly linked list threaded through the blocks themselves.

vLLM's `FreeKVCacheBlockQueue`. The front is the next block to be reused (and so the next
cached block to be evicted); the back is the most recently freed. A Python deque cannot remove
from the middle in O(1), and a prefix hit on a free cached block must take it out of the queue
wherever it is, hence the linked list with two sentinel blocks (id -1) that are never popped.

The LRU order comes from the callers: a request's blocks are freed tail first, so that among one
request's blocks the deepest (least likely to be shared) is evicted first; in 0.33 the pool
prepends blocks without a hash (scratch, reused first) and appends hashed ones.

`BlockPool.get_new_blocks` walks the front itself (its loop is `popleft_n` fused with the
eviction, the hottest loop of all); every other change to the links goes through a method here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any

from kvcore.block import KVCacheBlock

# A release's lists for the tracer's `on_free`: the block ids released, those that reached 0
# references, and those of them still cached (evictable).
FreeLists = tuple[list[Any], list[Any], list[Any]]
_NO_LIST: list[Any] = []      # (never appended to: `tracing` is False where it stands in)


class FreeKVCacheBlockQueue:
    __slots__ = ("fake_free_list_head", "fake_free_list_tail", "num_free_blocks")

    def __init__(self, blocks: list[KVCacheBlock]) -> None:
        self.num_free_blocks = len(blocks)
        # Link the blocks in list order: the initial order is by block id.
        for i in range(1, len(blocks)):
            blocks[i - 1].next_free_block = blocks[i]
            blocks[i].prev_free_block = blocks[i - 1]
        head = self.fake_free_list_head = KVCacheBlock(-1)
        tail = self.fake_free_list_tail = KVCacheBlock(-1)
        if blocks:
            head.next_free_block = blocks[0]
            blocks[0].prev_free_block = head
            tail.prev_free_block = blocks[-1]
            blocks[-1].next_free_block = tail
        else:
            head.next_free_block = tail
            tail.prev_free_block = head

    def popleft(self) -> KVCacheBlock:
        """Remove and return the front block."""
        head = self.fake_free_list_head
        first = head.next_free_block
        if first is self.fake_free_list_tail or first is None:
            raise ValueError("No free blocks available")
        nxt = first.next_free_block
        if nxt is None:
            raise RuntimeError("Invalid block found in popleft() which doesn't have a valid "
                               "next_free_block")
        head.next_free_block = nxt
        nxt.prev_free_block = head
        first.prev_free_block = first.next_free_block = None
        self.num_free_blocks -= 1
        return first

    def popleft_n(self, n: int) -> list[KVCacheBlock]:
        """Remove and return the first ``n`` blocks, front first."""
        if n == 0:
            return []
        assert self.num_free_blocks >= n, "not enough free blocks"
        self.num_free_blocks -= n
        head = self.fake_free_list_head
        nxt: KVCacheBlock | None = head.next_free_block
        out: list[KVCacheBlock] = []
        for _ in range(n):
            assert nxt is not None      # every link inside the list is set (sentinels end it)
            cur = nxt
            out.append(cur)
            nxt = cur.next_free_block
            cur.prev_free_block = cur.next_free_block = None
        assert nxt is not None
        head.next_free_block = nxt
        nxt.prev_free_block = head
        return out

    def remove(self, block: KVCacheBlock) -> None:
        """Unlink ``block`` from wherever it is (a prefix hit on a free cached block)."""
        self.remove_n((block,))

    def remove_n(self, blocks: Sequence[KVCacheBlock]) -> None:
        """Unlink each of ``blocks`` from wherever it is (a prefix hit on free cached blocks)."""
        for block in blocks:
            prev, nxt = block.prev_free_block, block.next_free_block
            if prev is None or nxt is None:
                raise RuntimeError(f"remove() called on an invalid block: {block}")
            prev.next_free_block = nxt
            nxt.prev_free_block = prev
            block.prev_free_block = block.next_free_block = None
            self.num_free_blocks -= 1

    def append(self, block: KVCacheBlock) -> None:
        """Put ``block`` at the back (evicted last)."""
        tail = self.fake_free_list_tail
        last = tail.prev_free_block
        if last is None:
            raise RuntimeError("prev_free_block of fake_free_list_tail should always exist")
        last.next_free_block = block
        block.prev_free_block = last
        block.next_free_block = tail
        tail.prev_free_block = block
        self.num_free_blocks += 1

    def append_n(self, blocks: list[KVCacheBlock]) -> None:
        """Put ``blocks`` at the back, in the given order."""
        if blocks:
            self.splice_back(*_chain(blocks), len(blocks))

    def prepend_n(self, blocks: list[KVCacheBlock]) -> None:
        """Put ``blocks`` at the front, in the given order (the first is reused first)."""
        if blocks:
            self.splice_front(*_chain(blocks), len(blocks))

    def release(self, ordered_blocks: Iterable[KVCacheBlock], caching: bool,
                trace: FreeLists | None = None) -> None:
        """`BlockPool.free_blocks`: drop one reference from each block; those reaching 0 come
        back, blocks without a hash (or every block, without caching) at the front, in the given
        order, hashed ones at the back. The null block is skipped. With ``trace`` the tracer's
        `on_free` lists are filled on the way: the ids released, those reaching 0, those of them
        that stay cached (a second walk over the blocks was 2.4% of a conversation replay)."""
        ids = freed = evictable = _NO_LIST
        tracing = trace is not None     # (a bool for the loop; mypy narrows on the test below)
        if trace is not None:
            ids, freed, evictable = trace
        # One pass: the blocks reaching 0 are linked into two detached chains on the way and
        # spliced in; lists for `prepend_n` / `append_n` cost +1% of the manager's instructions
        # on `kvcli bench`.
        front: KVCacheBlock | None = None
        front_last: KVCacheBlock | None = None
        back: KVCacheBlock | None = None
        back_last: KVCacheBlock | None = None
        n_front = n_back = 0
        for blk in ordered_blocks:
            if blk.is_null:
                continue
            rc = blk.ref_cnt - 1
            blk.ref_cnt = rc
            if tracing:
                ids.append(blk.id_obj)
            if rc:
                continue
            if tracing:
                freed.append(blk.id_obj)
                if blk.block_hash is not None:
                    evictable.append(blk.id_obj)
            if blk.block_hash is None or not caching:
                if front_last is None:
                    front = blk
                else:
                    front_last.next_free_block = blk
                    blk.prev_free_block = front_last
                front_last = blk
                n_front += 1
            else:
                if back_last is None:
                    back = blk
                else:
                    back_last.next_free_block = blk
                    blk.prev_free_block = back_last
                back_last = blk
                n_back += 1
        if front is not None and front_last is not None:
            self.splice_front(front, front_last, n_front)
        if back is not None and back_last is not None:
            self.splice_back(back, back_last, n_back)

    # `splice_front` / `splice_back` take a chain the caller already linked (``first`` ... ``last``
    # through ``next_free_block`` / ``prev_free_block``, ``n`` blocks): `release` links the
    # blocks it frees while walking them instead of collecting lists for `prepend_n` / `append_n`.
    def splice_front(self, first: KVCacheBlock, last: KVCacheBlock, n: int) -> None:
        """Put the chain ``first`` ... ``last`` at the front (``first`` is reused first)."""
        head = self.fake_free_list_head
        self._splice(head, head.next_free_block, first, last, n)

    def splice_back(self, first: KVCacheBlock, last: KVCacheBlock, n: int) -> None:
        """Put the chain ``first`` ... ``last`` at the back (``last`` is evicted last)."""
        tail = self.fake_free_list_tail
        self._splice(tail.prev_free_block, tail, first, last, n)

    def _splice(self, before: KVCacheBlock | None, after: KVCacheBlock | None,
                first: KVCacheBlock, last: KVCacheBlock, n: int) -> None:
        """Link the chain between two neighbours (a sentinel and its neighbour)."""
        assert before is not None and after is not None, "the sentinels always have neighbours"
        before.next_free_block = first
        first.prev_free_block = before
        last.next_free_block = after
        after.prev_free_block = last
        self.num_free_blocks += n

    def get_all_free_blocks(self) -> list[KVCacheBlock]:
        """Every free block, front to back (tests and views; O(n))."""
        out = []
        cur = self.fake_free_list_head.next_free_block
        tail = self.fake_free_list_tail
        while cur is not None and cur is not tail:
            out.append(cur)
            cur = cur.next_free_block
        return out

    def __len__(self) -> int:
        return self.num_free_blocks


def _chain(blocks: list[KVCacheBlock]) -> tuple[KVCacheBlock, KVCacheBlock]:
    """Link ``blocks`` to one another in order; (first, last) for a splice."""
    for a, b in pairwise(blocks):
        a.next_free_block = b
        b.prev_free_block = a
    return blocks[0], blocks[-1]
