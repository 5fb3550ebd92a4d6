"""Coordinators: which one is built, how groups are batched, 0.33's hybrid fixed point."""

from __future__ import annotations

from kvtest_helpers import keys_deleted, make_manager, make_request

from kvcore.coordinator import KVCacheCoordinatorNoPrefixCache, UnitaryKVCacheCoordinator
from kvcore.hybrid_coordinator import HybridKVCacheCoordinator


def test_factory():
    assert isinstance(make_manager(5).coordinator, UnitaryKVCacheCoordinator)
    assert isinstance(make_manager(5, enable_caching=False).coordinator,
                      KVCacheCoordinatorNoPrefixCache)
    assert isinstance(make_manager(5, groups=("full", "full"), enable_caching=False).coordinator,
                      KVCacheCoordinatorNoPrefixCache)
    assert isinstance(make_manager(5, groups=("full", ("swa", 8))).coordinator,
                      HybridKVCacheCoordinator)


def test_equal_specs_are_looked_up_together_full_attention_first():
    mgr = make_manager(30, groups=(("swa", 8), "full", ("swa", 8), ("swa", 16), "full"), bs=4)
    groups = [(type(sg.spec).__name__, sg.group_ids) for sg in mgr.coordinator.attention_groups]
    assert groups == [("FullAttentionSpec", [1, 4]), ("SlidingWindowSpec", [0, 2]),
                      ("SlidingWindowSpec", [3])]


def test_no_prefix_cache_never_hits():
    mgr = make_manager(10, groups=("full", ("swa", 8)), enable_caching=False, bs=4)
    req = make_request("r", range(12), bs=4)
    mgr.allocate_slots(req, 12)
    mgr.free(req)
    blocks, hit, _ = mgr.get_computed_blocks(make_request("s", range(13), bs=4))
    assert hit == 0 and blocks.blocks == ((), ())


def _three_types():
    # bs 4: W=5 needs 1 block before the hit's end, W=9 needs 2.
    mgr = make_manager(40, groups=("full", ("swa", 5), ("swa", 9)), bs=4)
    req = make_request("r", range(33), bs=4)
    mgr.allocate_slots(req, 33)
    mgr.free(req)
    return mgr, req.block_hashes


def test_fixed_point_takes_several_rounds():
    mgr, h = _three_types()
    q = make_request("q", range(33), bs=4)  # at most 32 tokens = 8 blocks can hit
    assert mgr.get_computed_blocks(q)[1] == 32
    # Round 1: full 32, W5 32, W9 28 (block 7 missing). Round 2: W5 at 28 needs block 6,
    # missing -> 24; W9 at 24 -> 24. Round 3 confirms 24.
    with keys_deleted(mgr.block_pool, [(h[7], 2), (h[6], 1)]):
        blocks, hit, uncached = mgr.coordinator.find_longest_cache_hit(q.block_hashes, 32)
        assert hit == 24 and uncached == 8
        full, w5, w9 = blocks
        assert len(full) == 6 and not any(b.is_null for b in full)
        assert [b.is_null for b in w5] == [True] * 5 + [False]
        assert [b.is_null for b in w9] == [True] * 4 + [False, False]
        assert mgr.get_computed_blocks(q)[2] == 32  # boundary = hit + uncached prefix


def test_full_attention_bounds_the_windows():
    mgr, h = _three_types()
    q = make_request("q", range(33), bs=4)
    with keys_deleted(mgr.block_pool, [(h[3], 0)]):
        blocks, hit, uncached = mgr.coordinator.find_longest_cache_hit(q.block_hashes, 32)
        assert hit == 12 and [len(b) for b in blocks] == [3, 3, 3] and uncached == 0


def test_simple_hybrid_is_one_round():
    mgr = make_manager(40, groups=("full", ("swa", 9)), bs=4)
    req = make_request("r", range(33), bs=4)
    mgr.allocate_slots(req, 33)
    mgr.free(req)
    h = req.block_hashes
    q = make_request("q", range(33), bs=4)
    with keys_deleted(mgr.block_pool, [(h[7], 1), (h[5], 1)]):
        # W9 from 32: block 7 missing, block 6 hits but block 5 is missing; blocks 4,3 -> 20.
        blocks, hit, _ = mgr.coordinator.find_longest_cache_hit(q.block_hashes, 32)
        assert hit == 20 and len(blocks[0]) == 5 and len(blocks[1]) == 5


def test_s23_groups_with_different_block_sizes():
    """Full attention at block size 32 over hashes at 16 (0.33: a coarse block's hash is its
    last fine hash), sliding window at 16; hits align to the lcm, 32."""
    from kvcore.hashing import BlockHasher
    from kvcore.kv_cache_manager import KVCacheManager, KVCachePoolConfig
    from kvcore.request import Request
    from kvcore.specs import FullAttentionSpec, KVCacheGroupSpec, SlidingWindowSpec

    cfg = KVCachePoolConfig(100, [
        KVCacheGroupSpec(("f",), FullAttentionSpec(block_size=32, dtype="float16")),
        KVCacheGroupSpec(("s",), SlidingWindowSpec(block_size=16, sliding_window=32))])
    mgr = KVCacheManager(cfg, 8192)
    assert (mgr.hash_block_size, mgr.scheduler_block_size) == (16, 32)
    hasher = BlockHasher(16)
    toks = [i for i in range(10) for _ in range(16)]
    r0 = Request("0", toks, hasher)
    assert mgr.allocate_slots(r0, 112).get_block_ids() == ([1, 2, 3, 4],
                                                           [5, 6, 7, 8, 9, 10, 11])
    # The full group's block 2 (tokens 64-95) is cached under fine hash 5.
    assert mgr.block_pool.blocks[3].block_hash == r0.block_hashes[5]
    for n in (113, 97):
        blocks, hit, _ = mgr.get_computed_blocks(Request(str(n), toks[:n], hasher))
        assert [len(g) for g in blocks.blocks] == [3, 6] and hit == 96
    r1 = Request("1", toks[:113], hasher)
    h = r0.block_hashes
    with keys_deleted(mgr.block_pool, [(h[6], 1), (h[5], 1)]):
        blocks, hit, _ = mgr.get_computed_blocks(r1)
        assert [len(g) for g in blocks.blocks] == [2, 4] and hit == 64


def test_a_deferred_free_over_two_groups_releases_as_vllm():
    """vLLM's deferred free (async scheduling with a connector) joins the groups' tables in
    group order and frees them reversed in ONE call: the uncached blocks are prepended together,
    the sliding group's tail first (kvcli took one group only: a ValueError over two; a call a
    group would give 4, 3, 2, 1, 8, 7, 6, 5). The tracer hears each group's part."""
    from kvtest_helpers import make_manager, make_request, queue_ids

    from kvcore.engine.deferred_frees import release
    from kvcore.tracing import RecordingTracer

    for traced in (False, True):
        tracer = RecordingTracer()
        mgr = make_manager(20, groups=("full", ("swa", 64)), enable_caching=False,
                           tracer=tracer if traced else None)
        req = make_request("r", range(50))
        assert mgr.allocate_slots(req, 50).get_block_ids() == ([1, 2, 3, 4], [5, 6, 7, 8])
        tables = mgr.pop_blocks_for_free(req)
        assert [[b.block_id for b in t] for t in tables] == [[1, 2, 3, 4], [5, 6, 7, 8]]
        assert mgr.get_block_ids("r") == ([], [])
        release(mgr, tables)
        assert queue_ids(mgr)[:8] == [8, 7, 6, 5, 4, 3, 2, 1]
        if traced:
            assert [r[2:] for r in tracer.records if r[0] == "free"] == [
                (1, [8, 7, 6, 5], [8, 7, 6, 5], []), (0, [4, 3, 2, 1], [4, 3, 2, 1], [])]


def test_encoder_tokens_size_the_cross_attention_group_alone():
    """`num_encoder_tokens` reaches the cross-attention group through both of the
    coordinator's calls (the full-sequence count and the allocation), in vLLM's parameter
    order: 22 encoder tokens take 6 blocks of 4 there, the 10 decoder tokens 3 in the full
    group."""
    from kvcore.kv_cache_manager import KVCacheManager, KVCachePoolConfig
    from kvcore.specs import CrossAttentionSpec, FullAttentionSpec, KVCacheGroupSpec

    cfg = KVCachePoolConfig(40, [KVCacheGroupSpec(("self",), FullAttentionSpec(block_size=4)),
                                 KVCacheGroupSpec(("cross",), CrossAttentionSpec(block_size=4))])
    kvm = KVCacheManager(cfg, max_model_len=64, hash_block_size=4, scheduler_block_size=4)
    out = kvm.allocate_slots(make_request("r", range(10), bs=4), 10, num_encoder_tokens=22,
                             full_sequence_must_fit=True)
    assert out is not None
    assert [[b.block_id for b in g] for g in out.blocks] == [[1, 2, 3], [4, 5, 6, 7, 8, 9]]
    assert kvm.block_pool.get_num_free_blocks() == 30
