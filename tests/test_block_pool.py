"""BlockPool and its hash map, beyond the scenarios: map semantics (§10.1 #23/#24), allocation,
the 0.33 free split, touch, usage, events and the tracer hook."""

from __future__ import annotations

import pytest
from kvtest_helpers import make_request

from kvcore.block import KVCacheBlock
from kvcore.block_pool import BlockHashToBlockMap, BlockPool
from kvcore.kv_events import BlockRemoved, BlockStored, hash_to_int
from kvcore.tracing import RecordingTracer


def qids(pool):
    return [b.block_id for b in pool.free_block_queue.get_all_free_blocks()]


def test_map_single_block_per_key():
    m = BlockHashToBlockMap()
    b0, b1 = KVCacheBlock(0), KVCacheBlock(1)
    m.insert(b"k", 0, b0)
    assert m.get_one_block(b"k", 0) is b0 and m.get_one_block(b"k", 1) is None
    assert m.pop(b"k", 0, 1) is None and m.get_one_block(b"k", 0) is b0  # id mismatch: kept
    assert m.pop(b"k", 0, 0) is b0 and len(m) == 0 and m.get_one_block(b"k", 0) is None
    m.insert(b"k", 0, b1)
    assert m.contain(b"k", 0, 1) and not m.contain(b"k", 0, 0)


def test_map_several_blocks_per_key():
    m = BlockHashToBlockMap()
    b0, b1 = KVCacheBlock(3), KVCacheBlock(7)
    m.insert(b"k", 0, b0)
    m.insert(b"k", 0, b1)
    assert len(m) == 1 and m.get_one_block(b"k", 0) is b0  # the first inserted
    assert m.pop(b"k", 0, 99) is None and len(m) == 1
    assert m.pop(b"k", 0, 3) is b0 and m.get_one_block(b"k", 0) is b1
    assert m.pop(b"k", 0, 7) is b1 and len(m) == 0


def test_null_block_and_capacity():
    pool = BlockPool(4, True, 16)
    assert pool.null_block.block_id == 0 and pool.null_block.is_null
    assert pool.get_num_free_blocks() == 3 and qids(pool) == [1, 2, 3]
    assert pool.get_usage() == 0.0
    blocks = pool.get_new_blocks(2)
    assert [b.block_id for b in blocks] == [1, 2] and all(b.ref_cnt == 1 for b in blocks)
    assert pool.get_usage() == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        pool.get_new_blocks(2)
    assert BlockPool(1, True, 16).get_usage() == 0
    with pytest.raises(AssertionError):
        BlockPool(0, True, 16)


def test_free_split_prepends_unhashed_appends_hashed():
    pool = BlockPool(8, True, 4)
    req = make_request("r", range(8), bs=4)
    blocks = pool.get_new_blocks(4)  # 1,2,3,4; the first two get hashes
    pool.cache_full_blocks(req, blocks, 0, 2, 4, 0)
    pool.free_blocks(reversed(blocks))  # 4,3 unhashed -> front; 2,1 hashed -> back
    assert qids(pool) == [4, 3, 5, 6, 7, 2, 1]


def test_free_split_without_caching_prepends_everything():
    pool = BlockPool(6, False, 4)
    blocks = pool.get_new_blocks(3)
    pool.free_blocks(blocks)
    assert qids(pool) == [1, 2, 3, 4, 5]


def test_shared_block_returns_only_when_last_reference_goes():
    pool = BlockPool(4, True, 4)
    (b,) = pool.get_new_blocks(1)
    pool.touch([b, pool.null_block])  # the null block is skipped
    assert b.ref_cnt == 2 and pool.null_block.ref_cnt == 0
    pool.free_blocks([b, pool.null_block])
    assert b.ref_cnt == 1 and b.block_id not in qids(pool)
    pool.free_blocks([b])
    assert qids(pool)[0] == b.block_id


def test_touch_takes_a_free_cached_block_off_the_queue():
    pool = BlockPool(5, True, 4)
    req = make_request("r", range(8), bs=4)
    blocks = pool.get_new_blocks(2)
    pool.cache_full_blocks(req, blocks, 0, 2, 4, 0)
    pool.free_blocks(reversed(blocks))
    assert qids(pool) == [3, 4, 2, 1]
    hit = pool.get_cached_block(req.block_hashes[1], [0])
    pool.touch(hit)
    assert qids(pool) == [3, 4, 1] and hit[0].ref_cnt == 1 and pool.get_num_free_blocks() == 3


def test_events_and_tracer_on_cache_and_eviction():
    tracer = RecordingTracer()
    tracer.req = "r"
    pool = BlockPool(3, True, 4, enable_kv_cache_events=True, tracer=tracer)
    req = make_request("r", range(9), bs=4)
    blocks = pool.get_new_blocks(2)
    pool.cache_full_blocks(req, blocks, 0, 1, 4, 0)
    pool.cache_full_blocks(req, blocks, 1, 2, 4, 0)
    ev = pool.take_events()
    assert [type(e) for e in ev] == [BlockStored, BlockStored]
    assert ev[1].parent_block_hash == hash_to_int(req.block_hashes[0])
    assert ev[1].token_ids == [4, 5, 6, 7] and ev[1].block_hashes == [
        hash_to_int(req.block_hashes[1])]
    assert ev[0].extra_keys == [None] and ev[0].medium == "GPU" and ev[0].lora_id is None
    pool.free_blocks(reversed(blocks))
    tracer.req = "s"
    pool.get_new_blocks(1)  # reuses block 2 (the request's tail, freed first)
    ev = pool.take_events()
    assert ev == [BlockRemoved(block_hashes=[hash_to_int(req.block_hashes[1])], medium="GPU",
                               group_idx=0)]
    recs = tracer.take()
    assert recs[0] == ("cache", "r", 0, [1], [req.block_hashes[0]])
    assert recs[-1] == ("evict", "s", 0, 2, req.block_hashes[1])


def test_take_events_without_events_is_empty():
    pool = BlockPool(3, True, 4)
    req = make_request("r", range(8), bs=4)
    pool.cache_full_blocks(req, pool.get_new_blocks(2), 0, 2, 4, 0)
    assert pool.take_events() == [] and pool.kv_event_queue == []


def test_hash_to_int_is_the_low_64_bits():
    h = bytes(range(32))
    assert hash_to_int(h) == int.from_bytes(h, "big") & (2 ** 64 - 1)
    assert hash_to_int(b"\x01\x02") == 0x0102
