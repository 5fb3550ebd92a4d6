"""Single-type managers (full attention and sliding window) looked at directly."""

from __future__ import annotations

from kvtest_helpers import keys_deleted, make_manager, make_request

from kvcore.managers.full_attention import FullAttentionManager
from kvcore.managers.registry import get_manager_class, spec_from_group_config, spec_kind
from kvcore.managers.sliding_window import SlidingWindowManager, contiguous_blocks_for_hit
from kvcore.specs import FullAttentionSpec, SlidingWindowSpec


def _cached_pool(n_tokens=32, bs=4, groups=("full",)):
    mgr = make_manager(40, groups=groups, bs=bs)
    req = make_request("r", range(n_tokens), bs=bs)
    mgr.allocate_slots(req, n_tokens)
    mgr.free(req)
    return mgr, req.block_hashes


def test_full_attention_stops_at_the_first_miss():
    mgr, h = _cached_pool()
    pool, spec = mgr.block_pool, FullAttentionSpec(block_size=4)
    blocks, n = FullAttentionManager.find_longest_cache_hit(h, 32, [0], pool, spec)
    assert n == 32 and [b.block_id for b in blocks[0]] == list(range(1, 9))
    with keys_deleted(pool, [(h[3], 0)]):
        blocks, n = FullAttentionManager.find_longest_cache_hit(h, 32, [0], pool, spec)
        assert n == 12  # blocks 4.. are cached but unreachable past the miss
    blocks, n = FullAttentionManager.find_longest_cache_hit(h, 31, [0], pool, spec)
    assert n == 28  # max_length rounds down to whole blocks


def test_full_attention_eagle_and_alignment():
    mgr, h = _cached_pool()
    pool, spec = mgr.block_pool, FullAttentionSpec(block_size=4)
    assert FullAttentionManager.find_longest_cache_hit(h, 32, [0], pool, spec, True)[1] == 28
    blocks, n = FullAttentionManager.find_longest_cache_hit(h, 28, [0], pool, spec, False, 8)
    assert n == 24 and len(blocks[0]) == 6


def test_sliding_window_needs_only_the_window():
    mgr, h = _cached_pool(groups=(("swa", 9),))
    pool, spec = mgr.block_pool, SlidingWindowSpec(block_size=4, sliding_window=9)
    assert contiguous_blocks_for_hit(9, 4, False) == 2
    with keys_deleted(pool, [(h[0], 0), (h[1], 0), (h[2], 0)]):
        blocks, n = SlidingWindowManager.find_longest_cache_hit(h, 32, [0], pool, spec)
        assert n == 32
        assert [b.block_id for b in blocks[0]] == [0, 0, 0, 0, 0, 0, 7, 8]
    with keys_deleted(pool, [(h[7], 0), (h[5], 0)]):
        blocks, n = SlidingWindowManager.find_longest_cache_hit(h, 32, [0], pool, spec)
        assert n == 20 and [b.block_id for b in blocks[0]] == [0, 0, 0, 4, 5]
    with keys_deleted(pool, [(h[i], 0) for i in range(1, 8)]):
        # Only a run from block 0 shorter than the window remains: the prefix fits in it.
        blocks, n = SlidingWindowManager.find_longest_cache_hit(h, 32, [0], pool, spec)
        assert n == 4 and [b.block_id for b in blocks[0]] == [1]


def test_sliding_window_skipped_tokens():
    mgr = make_manager(10, groups=(("swa", 4),), bs=2)
    m = mgr.coordinator.single_type_managers[0]
    assert [m.get_num_skipped_tokens(n) for n in (0, 3, 4, 7, 11)] == [0, 0, 1, 4, 8]
    assert isinstance(m, SlidingWindowManager) and m.skips_tokens


def test_remove_skipped_blocks_frees_later_blocks_first():
    mgr = make_manager(12, groups=(("swa", 4),), bs=2)
    req = make_request("r", range(11), bs=2)
    mgr.allocate_slots(req, 11)  # blocks 1-6
    m = mgr.coordinator.single_type_managers[0]
    m.remove_skipped_blocks("r", 11)  # 8 tokens skipped: blocks 1-4 go, 4 first
    assert mgr.get_block_ids("r") == ([0, 0, 0, 0, 5, 6],)
    q = [b.block_id for b in mgr.block_pool.free_block_queue.get_all_free_blocks()]
    assert q[-4:] == [4, 3, 2, 1]  # hashed: appended in the order freed
    m.remove_skipped_blocks("r", 11)  # nothing more: stops at the first null
    assert mgr.get_block_ids("r") == ([0, 0, 0, 0, 5, 6],)


def test_registry():
    assert get_manager_class(FullAttentionSpec(block_size=4)) is FullAttentionManager
    assert get_manager_class(SlidingWindowSpec(block_size=4, sliding_window=3)) is \
        SlidingWindowManager
    assert spec_kind(SlidingWindowSpec(block_size=4, sliding_window=3)) == "sliding_window"
    assert spec_from_group_config({"type": "sliding_window", "sliding_window": 7}, 16) == \
        SlidingWindowSpec(block_size=16, sliding_window=7)
    assert spec_from_group_config({"type": "full"}, 8) == FullAttentionSpec(block_size=8)
