"""The reference's conformance scenarios S1-S15 (§11), with vLLM 0.33's expectations (S16-S19 and
S22: test_scenarios_pool.py).

Default: one full-attention group, block size 16, sha256, caching on, max_model_len 8192;
``hit = get_computed_blocks``; ``alloc(req, new, hit_tokens, hit_blocks)``.
"""

from __future__ import annotations

from kvtest_helpers import C3, ids, make_manager, make_request, queue_ids

from kvcore.block_pool import BlockPool
from kvcore.request import MultiModalFeature


def _s1_s2():
    mgr = make_manager(11)
    req0 = make_request("0", C3 + [3] * 7)
    hit_blocks, hit, _ = mgr.get_computed_blocks(req0)
    assert len(req0.block_hashes) == 3 and hit == 0 and ids(hit_blocks) == [[]]
    assert ids(mgr.allocate_slots(req0, 55)) == [[1, 2, 3, 4]]
    req1 = make_request("1", C3 + [3] * 5)
    hit_blocks, hit, _ = mgr.get_computed_blocks(req1)
    return mgr, req0, req1, hit_blocks, hit


def test_s1_prefill_miss():
    mgr, req0, *_ = _s1_s2()
    pool = mgr.block_pool
    for i, bid in enumerate((1, 2, 3)):
        blk = pool.blocks[bid]
        assert blk.block_hash == req0.block_hashes[i] and blk.hash_group == 0
        assert blk.ref_cnt == 1
    assert pool.blocks[4].block_hash is None and pool.blocks[4].ref_cnt == 1


def test_s2_hit_while_in_use():
    mgr, _, req1, hit_blocks, hit = _s1_s2()
    assert ids(hit_blocks) == [[1, 2, 3]] and hit == 48
    assert ids(mgr.allocate_slots(req1, 5, 48, hit_blocks)) == [[5]]
    assert [mgr.block_pool.blocks[i].ref_cnt for i in (1, 2, 3)] == [2, 2, 2]
    assert mgr.block_pool.get_num_free_blocks() == 5


def _s3():
    mgr, req0, req1, hit_blocks, _ = _s1_s2()
    mgr.allocate_slots(req1, 5, 48, hit_blocks)
    mgr.free(req0)
    mgr.free(req1)
    return mgr


def test_s3_free_order_033():
    mgr = _s3()
    assert mgr.block_pool.get_num_free_blocks() == 10
    # Unhashed tails prepended (req1's block 5 ahead of req0's block 4), hashed appended.
    assert queue_ids(mgr) == [5, 4, 6, 7, 8, 9, 10, 3, 2, 1]


def test_s4_s5_hit_from_free_queue_then_eviction_order():
    mgr = _s3()
    req2 = make_request("2", C3 + [3] * 6)
    hit_blocks, hit, _ = mgr.get_computed_blocks(req2)
    assert ids(hit_blocks) == [[1, 2, 3]] and hit == 48
    assert ids(mgr.allocate_slots(req2, 5, 48, hit_blocks)) == [[5]]
    assert mgr.block_pool.get_num_free_blocks() == 6
    assert all(b.ref_cnt == 0 for b in mgr.block_pool.free_block_queue.get_all_free_blocks())
    # S5
    mgr.free(req2)
    req3 = make_request("3", [99] * 160)
    assert mgr.get_computed_blocks(req3)[1] == 0
    assert ids(mgr.allocate_slots(req3, 160)) == [[5, 4, 6, 7, 8, 9, 10, 3, 2, 1]]
    q = mgr.block_pool.free_block_queue
    assert q.num_free_blocks == 0
    assert q.fake_free_list_head.next_free_block is q.fake_free_list_tail
    assert q.fake_free_list_tail.prev_free_block is q.fake_free_list_head


def test_s6_prompt_logprobs_skip_reading_but_still_cache():
    mgr = make_manager(11)
    req0 = make_request("0", C3 + [3] * 7, skip_reading_prefix_cache=True)
    blocks, hit, _ = mgr.get_computed_blocks(req0)
    assert hit == 0 and blocks is mgr.empty_kv_cache_blocks
    assert ids(mgr.allocate_slots(req0, 55)) == [[1, 2, 3, 4]]
    req1 = make_request("1", C3 + [3] * 5)
    blocks, hit, _ = mgr.get_computed_blocks(req1)
    assert ids(blocks) == [[1, 2, 3]] and hit == 48
    mgr.allocate_slots(req1, 5, 48, blocks)
    mgr.free(req0)
    mgr.free(req1)
    req2 = make_request("2", C3 + [3] * 6, skip_reading_prefix_cache=True)
    assert mgr.get_computed_blocks(req2)[1] == 0
    new = mgr.allocate_slots(req2, 55)
    assert ids(new) == [[5, 4, 6, 7]]
    pool = mgr.block_pool
    for i, bid in enumerate((5, 4, 6)):
        assert pool.blocks[bid].block_hash == req0.block_hashes[i]
        assert pool.blocks[bid].ref_cnt == 1
    # Duplicates are allowed: each key now holds two blocks, the first inserted first.
    assert [b.block_id for b in pool.get_cached_block(req0.block_hashes[0], [0])] == [1]
    assert len(pool.cached_block_hash_to_block) == 3


def test_s7_decode_hashes_filled_blocks():
    mgr = make_manager(11)
    req0 = make_request("0", C3 + [3] * 7)
    assert ids(mgr.allocate_slots(req0, 55)) == [[1, 2, 3, 4]]
    req0.num_computed_tokens = 55
    for t in range(4):
        req0.append_output_token_ids(8 + t)
    assert ids(mgr.allocate_slots(req0, 4)) == [[]]
    assert mgr.block_pool.blocks[4].block_hash is None
    req0.num_computed_tokens = 59
    for t in range(19):
        req0.append_output_token_ids(12 + t)
    assert len(ids(mgr.allocate_slots(req0, 19))[0]) == 1
    table = mgr.get_blocks("0").blocks[0]
    assert table[-2].block_hash == req0.block_hashes[3] and table[-1].block_hash is None


def test_s8_evict_order_across_requests():
    mgr = make_manager(11)
    req0 = make_request("0", range(87))
    req1 = make_request("1", range(87, 135))
    assert ids(mgr.allocate_slots(req0, 87)) == [[1, 2, 3, 4, 5, 6]]
    assert ids(mgr.allocate_slots(req1, 48)) == [[7, 8, 9]]
    assert mgr.block_pool.get_num_free_blocks() == 1
    mgr.free(req0)
    mgr.free(req1)
    assert queue_ids(mgr) == [6, 10, 5, 4, 3, 2, 1, 9, 8, 7]
    req2 = make_request("2", range(35))
    blocks, hit, _ = mgr.get_computed_blocks(req2)
    assert ids(blocks) == [[1, 2]] and hit == 32
    assert ids(mgr.allocate_slots(req2, 3, 32, blocks)) == [[6]]
    assert mgr.block_pool.get_num_free_blocks() == 7


def test_s9_reused_block_loses_its_hash():
    mgr = make_manager(2)
    req0 = make_request("0", range(16))
    assert ids(mgr.allocate_slots(req0, 16)) == [[1]]
    assert mgr.block_pool.blocks[1].block_hash is not None
    mgr.free(req0)
    req1 = make_request("1", range(15))
    assert mgr.get_computed_blocks(req1)[1] == 0
    assert ids(mgr.allocate_slots(req1, 15)) == [[1]]
    assert mgr.block_pool.blocks[1].block_hash is None
    assert len(mgr.block_pool.cached_block_hash_to_block) == 0


def test_s10_hit_block_is_not_the_one_evicted():
    mgr = make_manager(3)
    r0, r1 = make_request("0", range(16)), make_request("1", range(16, 32))
    assert ids(mgr.allocate_slots(r0, 16)) == [[1]]
    assert ids(mgr.allocate_slots(r1, 16)) == [[2]]
    mgr.free(r0)
    mgr.free(r1)
    r2 = make_request("2", range(32))
    blocks, hit, _ = mgr.get_computed_blocks(r2)
    assert ids(blocks) == [[1]] and hit == 16
    assert ids(mgr.allocate_slots(r2, 16, 16, blocks)) == [[2]]


def test_s11_caching_disabled():
    mgr = make_manager(5, bs=4, enable_caching=False)
    r0 = make_request("0", range(10), bs=4)
    assert mgr.get_computed_blocks(r0)[1] == 0
    assert ids(mgr.allocate_slots(r0, 10)) == [[1, 2, 3]]
    mgr.free(r0)
    r1 = make_request("1", range(16), bs=4)
    assert mgr.get_computed_blocks(r1)[1] == 0
    assert len(ids(mgr.allocate_slots(r1, 16))[0]) == 4
    r2 = make_request("2", range(4), bs=4)
    assert mgr.get_computed_blocks(r2)[1] == 0
    assert mgr.allocate_slots(r2, 4) is None
    assert len(mgr.block_pool.cached_block_hash_to_block) == 0


def test_s12_cache_full_blocks_is_incremental():
    pool = BlockPool(5, True, 4)
    req = make_request("r", range(14), bs=4)
    blocks = pool.get_new_blocks(3)
    pool.cache_full_blocks(req, blocks, 0, 2, 4, 0)
    assert len(pool.cached_block_hash_to_block) == 2
    assert [b.block_hash for b in blocks[:2]] == req.block_hashes[:2]
    pool.cache_full_blocks(req, blocks, 2, 3, 4, 0)
    assert len(pool.cached_block_hash_to_block) == 3
    assert blocks[2].block_hash == req.block_hashes[2]
    pool.cache_full_blocks(req, blocks, 3, 3, 4, 0)  # nothing new
    assert len(pool.cached_block_hash_to_block) == 3


def test_s13_group_ids_make_separate_keys():
    pool = BlockPool(10, True, 4)
    req = make_request("r", range(14), bs=4)
    g0, g1 = pool.get_new_blocks(2), pool.get_new_blocks(3)
    pool.cache_full_blocks(req, g0, 0, 2, 4, 0)
    pool.cache_full_blocks(req, g1, 0, 3, 4, 1)
    assert len(pool.cached_block_hash_to_block) == 5
    h = req.block_hashes
    assert pool.get_cached_block(h[2], [0]) is None
    assert pool.get_cached_block(h[2], [1]) == [g1[2]]
    assert pool.get_cached_block(h[1], [0, 1]) == [g0[1], g1[1]]
    assert pool.get_cached_block(h[2], [0, 1]) is None


def _mm_request(rid, tail):
    toks = [i % 7 for i in range(48)] + tail
    mm = [MultiModalFeature("aaa", 11, 10), MultiModalFeature("bbb", 30, 18),
          MultiModalFeature("ccc", 48, 7)]
    return make_request(rid, toks, mm_features=mm)


def test_s14_multimodal_prefix_hit():
    mgr = make_manager(11)
    req0 = _mm_request("0", [i % 7 for i in range(48, 59)])
    assert len(req0.block_hashes) == 3
    assert ids(mgr.allocate_slots(req0, 59)) == [[1, 2, 3, 4]]
    req0.num_computed_tokens = 59
    for _ in range(5):
        req0.append_output_token_ids(8)
    assert len(req0.block_hashes) == 4
    mgr.allocate_slots(req0, 5)
    # Same images, a different tail: the three image blocks hit.
    req1 = _mm_request("1", [6] * 11)
    blocks, hit, _ = mgr.get_computed_blocks(req1)
    assert ids(blocks) == [[1, 2, 3]] and hit == 48
    # Same tokens, a different image in block 1: the hit stops at block 0.
    toks = [i % 7 for i in range(59)]
    other = make_request("2", toks, mm_features=[MultiModalFeature("aaa", 11, 10),
                                                  MultiModalFeature("zzz", 30, 18)])
    assert mgr.get_computed_blocks(other)[1] == 16


def test_s15_cache_salt():
    mgr = make_manager(11)
    req0 = make_request("0", C3 + [3] * 11, cache_salt="salt1")
    mgr.allocate_slots(req0, 59)
    same = make_request("1", C3 + [4] * 11, cache_salt="salt1")
    blocks, hit, _ = mgr.get_computed_blocks(same)
    assert ids(blocks) == [[1, 2, 3]] and hit == 48
    other = make_request("2", C3 + [3] * 11, cache_salt="salt2")
    assert mgr.get_computed_blocks(other)[1] == 0
    unsalted = make_request("3", C3 + [3] * 11)
    assert mgr.get_computed_blocks(unsalted)[1] == 0
