"""The free block queue: exact orders front to back and back to front after every operation."""

from __future__ import annotations

from itertools import pairwise

import pytest

from kvcore.block import KVCacheBlock
from kvcore.free_queue import FreeKVCacheBlockQueue


def ids(q: FreeKVCacheBlockQueue) -> list[int]:
    return [b.block_id for b in q.get_all_free_blocks()]


def make(n: int):
    blocks = [KVCacheBlock(i) for i in range(n)]
    return blocks, FreeKVCacheBlockQueue(blocks)


def test_kv_cache_block_defaults_and_hash():
    b = KVCacheBlock(0)
    assert (b.block_id, b.ref_cnt, b.block_hash, b.is_null) == (0, 0, None, False)
    b.ref_cnt += 1
    assert b.ref_cnt == 1
    b.set_block_hash(b"\x01" * 32, 2)
    assert b.block_hash_with_group_id == b"\x01" * 32 + b"\x00\x00\x00\x02"
    with pytest.raises(AssertionError):
        b.set_block_hash(b"\x02" * 32, 0)
    b.reset_hash()
    assert b.block_hash is None and b.block_hash_with_group_id is None


def test_one_block_queue():
    blocks, q = make(1)
    assert q.num_free_blocks == 1
    assert q.fake_free_list_head.next_free_block is blocks[0]
    assert q.fake_free_list_tail.prev_free_block is blocks[0]


def test_empty_queue_sentinels_point_at_each_other():
    _, q = make(0)
    assert q.fake_free_list_head.next_free_block is q.fake_free_list_tail
    assert q.fake_free_list_tail.prev_free_block is q.fake_free_list_head
    with pytest.raises(ValueError, match="No free blocks available"):
        q.popleft()


def test_popleft_remove_append():
    b, q = make(5)
    assert q.popleft() is b[0] and q.num_free_blocks == 4
    assert b[0].prev_free_block is None and b[0].next_free_block is None
    q.remove(b[2])
    assert q.num_free_blocks == 3
    assert b[1].next_free_block is b[3] and b[3].prev_free_block is b[1]
    assert ids(q) == [1, 3, 4]
    q.append(b[2])
    assert ids(q) == [1, 3, 4, 2] and q.fake_free_list_tail.prev_free_block is b[2]
    assert [q.popleft().block_id for _ in range(4)] == [1, 3, 4, 2]
    assert q.num_free_blocks == 0
    assert q.fake_free_list_head.next_free_block is q.fake_free_list_tail
    with pytest.raises(ValueError, match="No free blocks available"):
        q.popleft()


def test_remove_of_a_block_not_in_the_queue_raises():
    b, q = make(3)
    q.popleft()
    with pytest.raises(RuntimeError):
        q.remove(b[0])


def test_append_n_builds_the_chain_in_order():
    _, q = make(0)
    blocks = [KVCacheBlock(i) for i in range(6)]
    q.append_n([])
    assert ids(q) == [] and q.num_free_blocks == 0
    q.append_n([blocks[0]])
    q.append_n([blocks[4], blocks[5]])
    q.append_n([blocks[1], blocks[2], blocks[3]])
    assert ids(q) == [0, 4, 5, 1, 2, 3] and q.num_free_blocks == 6
    # Walk backwards too: prev links are consistent.
    back, cur = [], q.fake_free_list_tail.prev_free_block
    while cur is not q.fake_free_list_head:
        back.append(cur.block_id)
        cur = cur.prev_free_block
    assert back == [3, 2, 1, 5, 4, 0]
    q.fake_free_list_tail.prev_free_block = None  # corrupted tail
    with pytest.raises(AssertionError):
        q.append_n([KVCacheBlock(9)])


def test_popleft_n_in_queue_order():
    blocks = [KVCacheBlock(i) for i in range(6)]
    order = [1, 3, 5, 4, 0, 2]
    q = FreeKVCacheBlockQueue([blocks[i] for i in order])
    assert q.popleft_n(0) == []
    assert [x.block_id for x in q.popleft_n(1)] == [1]
    assert [x.block_id for x in q.popleft_n(2)] == [3, 5]
    popped = q.popleft_n(3)
    assert [x.block_id for x in popped] == [4, 0, 2]
    assert all(x.prev_free_block is None and x.next_free_block is None for x in popped)
    assert q.num_free_blocks == 0
    assert q.fake_free_list_head.next_free_block is q.fake_free_list_tail


def test_prepend_n_puts_blocks_at_the_front_in_order():
    _, q = make(3)
    extra = [KVCacheBlock(7), KVCacheBlock(8)]
    q.prepend_n([])
    q.prepend_n(extra)
    assert ids(q) == [7, 8, 0, 1, 2] and q.num_free_blocks == 5
    assert q.popleft() is extra[0]


def test_popleft_n_drain_and_refill():
    _, q = make(4)
    drained = q.popleft_n(4)
    assert ids(q) == []
    q.append_n(drained[2:])
    q.prepend_n(drained[:2])
    assert ids(q) == [0, 1, 2, 3] and q.num_free_blocks == 4
    assert [x.block_id for x in q.popleft_n(4)] == [0, 1, 2, 3]


def test_get_all_free_blocks_follows_every_operation():
    b, q = make(5)
    q.popleft()
    q.remove(b[3])
    q.append(b[0])
    assert ids(q) == [1, 2, 4, 0]


def back_ids(q: FreeKVCacheBlockQueue) -> list[int]:
    out, cur = [], q.fake_free_list_tail.prev_free_block
    while cur is not q.fake_free_list_head:
        out.append(cur.block_id)
        cur = cur.prev_free_block
    return out


def test_remove_n_unlinks_each_block_wherever_it_is():
    b, q = make(7)
    q.remove_n([b[3], b[0], b[6]])          # middle, front, back
    assert ids(q) == [1, 2, 4, 5] and back_ids(q) == [5, 4, 2, 1] and q.num_free_blocks == 4
    assert b[3].prev_free_block is None and b[3].next_free_block is None
    q.remove_n([])
    assert q.num_free_blocks == 4
    with pytest.raises(RuntimeError):
        q.remove_n([b[0]])                  # not in the queue any more


def test_splices_put_a_linked_chain_at_either_end():
    _, q = make(2)
    extra = [KVCacheBlock(i) for i in range(10, 16)]
    for x, y in pairwise(extra):           # the caller links its chain (as free_blocks does)
        x.next_free_block, y.prev_free_block = y, x
    q.splice_front(extra[0], extra[2], 3)
    assert ids(q) == [10, 11, 12, 0, 1] and back_ids(q) == [1, 0, 12, 11, 10]
    q.splice_back(extra[3], extra[5], 3)
    assert ids(q) == [10, 11, 12, 0, 1, 13, 14, 15] and q.num_free_blocks == 8
    assert back_ids(q) == [15, 14, 13, 1, 0, 12, 11, 10]
    assert [x.block_id for x in q.popleft_n(4)] == [10, 11, 12, 0]
