"""The reference's conformance scenarios S16-S19 and S22 (§11), with vLLM 0.33's expectations: a
refused allocation, the prefix cache's reset, duplicate keys, KV events, a hybrid model.

Default: one full-attention group, block size 16, sha256, caching on, max_model_len 8192;
``hit = get_computed_blocks``; ``alloc(req, new, hit_tokens, hit_blocks)``.
"""

from __future__ import annotations

import pytest
from kvtest_helpers import C3, ids, keys_deleted, make_manager, make_request

from kvcore.block_pool import BlockPool
from kvcore.kv_events import AllBlocksCleared, BlockRemoved, BlockStored, hash_to_int


def test_s16_refused_allocation_leaves_hits_untouched():
    mgr = make_manager(11)
    req0 = make_request("0", C3)
    assert ids(mgr.allocate_slots(req0, 48)) == [[1, 2, 3]]
    req1 = make_request("1", C3 * 2)
    blocks, hit, _ = mgr.get_computed_blocks(req1)
    assert hit == 48
    assert ids(mgr.allocate_slots(req1, 48, 48, blocks)) == [[4, 5, 6]]
    mgr.free(req1)
    pool = mgr.block_pool
    assert [pool.blocks[i].ref_cnt for i in range(1, 7)] == [1, 1, 1, 0, 0, 0]
    req2 = make_request("2", [7] * 32)
    assert ids(mgr.allocate_slots(req2, 32)) == [[7, 8]]
    assert pool.get_num_free_blocks() == 5
    req3 = make_request("3", C3 * 3)
    blocks, hit, _ = mgr.get_computed_blocks(req3)
    assert ids(blocks) == [[1, 2, 3, 4, 5, 6]] and hit == 96
    # 3 new blocks + 3 hits sitting in the free queue = 6 > 5 free.
    assert mgr.allocate_slots(req3, 48, 96, blocks) is None
    assert [pool.blocks[i].ref_cnt for i in range(1, 7)] == [1, 1, 1, 0, 0, 0]
    assert pool.get_num_free_blocks() == 5 and "3" not in mgr.coordinator.single_type_managers[
        0].num_cached_block


def test_s17_reset_prefix_cache():
    mgr = make_manager(11, enable_kv_cache_events=True)
    req0 = make_request("0", C3 + [3] * 7)
    mgr.allocate_slots(req0, 55)
    req1 = make_request("1", C3 + [3] * 5)
    blocks, hit, _ = mgr.get_computed_blocks(req1)
    mgr.allocate_slots(req1, 5, hit, blocks)
    assert mgr.reset_prefix_cache() is False
    assert len(mgr.block_pool.cached_block_hash_to_block) == 3
    mgr.free(req0)
    mgr.free(req1)
    assert mgr.reset_prefix_cache() is True
    assert len(mgr.block_pool.cached_block_hash_to_block) == 0
    assert all(b.block_hash is None for b in mgr.block_pool.blocks)
    assert isinstance(mgr.take_events()[-1], AllBlocksCleared)
    assert mgr.make_prefix_cache_stats().reset is True


def test_s18_eviction_with_duplicate_keys():
    pool = BlockPool(5, True, 16)
    blocks = pool.get_new_blocks(4)  # ids 1-4 stand for the reference's blocks 0-3
    k0, k1, k2 = b"\x00" * 32, b"\x01" * 32, b"\x02" * 32
    for blk, key in zip(blocks, (k0, k1, k2, k0)):
        blk.set_block_hash(key, 0)
        pool.cached_block_hash_to_block.insert(key, 0, blk)
    m = pool.cached_block_hash_to_block.group_map(0)
    assert m[k0] == {1: blocks[0], 4: blocks[3]} and m[k1] is blocks[1] and m[k2] is blocks[2]
    pool.evict_blocks({2})
    assert k1 not in m and blocks[1].block_hash is None
    pool.evict_blocks({1})
    assert m[k0] == {4: blocks[3]}
    pool.evict_blocks({3})
    assert k2 not in m
    pool.evict_blocks({4})
    assert len(pool.cached_block_hash_to_block) == 0
    # Ref counts and queue positions are untouched by evict_blocks.
    assert [b.ref_cnt for b in blocks] == [1, 1, 1, 1] and pool.get_num_free_blocks() == 0


@pytest.mark.parametrize("B", [2, 3, 10])
def test_s19_kv_events(B):
    mgr = make_manager(B + 1, enable_kv_cache_events=True)
    req0 = make_request("0", range(16 * B))
    mgr.allocate_slots(req0, 16 * B)
    events = mgr.take_events()
    assert len(events) == 1 and isinstance(events[-1], BlockStored)
    stored = events[-1]
    assert len(stored.block_hashes) == B and len(stored.token_ids) == 16 * B
    assert stored.block_hashes == [hash_to_int(h) for h in req0.block_hashes]
    assert stored.parent_block_hash is None and stored.block_size == 16
    assert (stored.group_idx, stored.kv_cache_spec_kind) == (0, "full_attention")
    assert mgr.take_events() == []
    mgr.free(req0)
    req1 = make_request("1", range(16 * B))
    mgr.allocate_slots(req1, 16 * B)  # no lookup: every cached block is evicted and re-cached
    events = mgr.take_events()
    assert len(events) == B + 1
    assert all(isinstance(e, BlockRemoved) for e in events[:B])
    assert isinstance(events[-1], BlockStored)
    assert {e.block_hashes[0] for e in events[:B]} == set(stored.block_hashes)
    mgr.free(req1)
    assert mgr.reset_prefix_cache()
    assert [type(e) for e in mgr.take_events()] == [AllBlocksCleared]


def _s22():
    mgr = make_manager(21, groups=("full", ("swa", 32), ("swa", 32)))
    req0 = make_request("0", C3 + [3] * 7)
    assert ids(mgr.allocate_slots(req0, 55)) == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
    req1 = make_request("1", C3 + [3] * 5)
    blocks, hit, _ = mgr.get_computed_blocks(req1)
    return mgr, req0, req1, blocks, hit


def test_s22_hybrid_full_and_two_sliding_windows():
    mgr, _, req1, blocks, hit = _s22()
    assert ids(blocks) == [[1, 2, 3], [0, 6, 7], [0, 10, 11]] and hit == 48
    assert ids(mgr.allocate_slots(req1, 5, 48, blocks)) == [[13], [14], [15]]
    pool = mgr.block_pool
    assert [pool.blocks[i].ref_cnt for i in (1, 2, 3, 6, 7, 10, 11)] == [2] * 7
    # The null block stands where the window no longer reaches.
    assert ids(mgr.get_blocks("1")) == [[1, 2, 3, 13], [0, 6, 7, 14], [0, 10, 11, 15]]


@pytest.mark.parametrize("deleted,expected_blocks", [
    ([(0, 1), (0, 2)], 3),
    ([(0, 0)], 0),
    ([(2, 0), (2, 1), (2, 2)], 2),
    ([(2, 0)], 2),
    ([(2, 1)], 2),
    ([(2, 2)], 2),
    ([(2, 0), (0, 1), (0, 2)], 0),
])
def test_s22_hits_after_deleting_keys(deleted, expected_blocks):
    mgr, req0, req1, blocks, _ = _s22()
    mgr.allocate_slots(req1, 5, 48, blocks)
    mgr.free(req0)
    mgr.free(req1)
    h = req0.block_hashes
    with keys_deleted(mgr.block_pool, [(h[i], g) for i, g in deleted]):
        got, n, _ = mgr.get_computed_blocks(make_request("q", C3 + [3] * 5))
        assert n == expected_blocks * 16
        assert [len(g) for g in got.blocks] == [expected_blocks] * 3
