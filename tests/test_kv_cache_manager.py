"""KVCacheManager: allocate_slots' options, stats at admission, events, tracer, views."""

from __future__ import annotations

import pytest
from kvtest_helpers import C3, ids, make_manager, make_request

from kvcore.kv_cache_manager import KVCacheManager
from kvcore.kv_events import BlockRemoved, BlockStored, hash_to_int
from kvcore.request import RequestStatus
from kvcore.specs import FullAttentionSpec, KVCacheGroupSpec
from kvcore.tracing import RecordingTracer


def test_lookahead_slots_are_allocated_but_never_cached():
    mgr = make_manager(10, bs=4)
    req = make_request("r", [1, 2, 3], bs=4)
    assert len(ids(mgr.allocate_slots(req, 3, num_lookahead_tokens=2))[0]) == 2
    req2 = make_request("s", [1, 2, 3], bs=4)
    assert len(ids(mgr.allocate_slots(req2, 3, num_lookahead_tokens=4))[0]) == 2
    req3 = make_request("t", [5, 6, 7, 8], bs=4)
    mgr.allocate_slots(req3, 4, num_lookahead_tokens=4)
    table = mgr.get_blocks("t").blocks[0]
    assert len(table) == 2 and table[0].block_hash is not None and table[1].block_hash is None


def test_max_model_len_caps_the_slots():
    mgr = make_manager(10, bs=4, max_model_len=10)
    req = make_request("r", range(8), bs=4)
    assert len(ids(mgr.allocate_slots(req, 8, num_lookahead_tokens=8))[0]) == 3


def test_zero_new_tokens_without_hits_is_an_error():
    mgr = make_manager(10)
    with pytest.raises(ValueError):
        mgr.allocate_slots(make_request("r", [1]), 0)


def test_full_sequence_must_fit_gates_a_chunked_admission():
    mgr = make_manager(5, bs=4)
    req = make_request("r", range(20), bs=4)  # 5 blocks, 4 usable
    assert mgr.allocate_slots(req, 4, full_sequence_must_fit=True) is None
    assert mgr.block_pool.get_num_free_blocks() == 4 and mgr.get_block_ids("r") == ([],)
    assert ids(mgr.allocate_slots(req, 4)) == [[1]]


def test_watermark_applies_to_waiting_requests_only_when_others_run():
    mgr = make_manager(10, bs=4, watermark=0.5)  # keep 5 of 10 blocks free
    assert mgr.watermark_blocks == 5
    small = make_request("a", range(16), bs=4)  # 4 blocks: 4 + 5 <= 9
    assert mgr.allocate_slots(small, 16) is not None
    big = make_request("b", range(100, 120), bs=4)  # 5 blocks: 5 + 5 > 5 free
    assert mgr.allocate_slots(big, 20) is None
    assert mgr.allocate_slots(big, 20, has_scheduled_reqs=False) is not None
    mgr.free(big)
    big.status = RequestStatus.RUNNING
    assert mgr.allocate_slots(big, 20) is not None


def test_delay_cache_blocks_then_cache_blocks():
    mgr = make_manager(10, bs=4)
    req = make_request("r", range(10), bs=4)
    mgr.allocate_slots(req, 10, delay_cache_blocks=True)
    assert len(mgr.block_pool.cached_block_hash_to_block) == 0
    mgr.cache_blocks(req, 10)
    assert len(mgr.block_pool.cached_block_hash_to_block) == 2


def test_prefix_cache_stats_recorded_at_admission():
    mgr = make_manager(20)
    r0 = make_request("0", C3 + [3])
    blocks, hit, _ = mgr.get_computed_blocks(r0)
    assert mgr.allocate_slots(r0, 49, hit, blocks)
    mgr.record_prefix_cache_stats(r0, hit)
    r1 = make_request("1", C3 + [4] * 3)
    blocks, hit, _ = mgr.get_computed_blocks(r1)
    mgr.get_computed_blocks(r1)  # a lookup alone records nothing
    mgr.record_prefix_cache_stats(r1, hit)
    r2 = make_request("2", C3 + [5])
    r2.num_preemptions = 1  # a resumed request goes to the preempted counters
    mgr.record_prefix_cache_stats(r2, 48)
    st = mgr.make_prefix_cache_stats()
    assert (st.requests, st.queries, st.hits) == (2, 49 + 51, 48)
    assert (st.preempted_requests, st.preempted_queries, st.preempted_hits) == (1, 49, 48)
    assert mgr.make_prefix_cache_stats().requests == 0  # taking resets


def test_log_stats_off():
    mgr = make_manager(20, log_stats=False)
    r = make_request("0", C3)
    mgr.record_prefix_cache_stats(r, 0)
    assert mgr.make_prefix_cache_stats() is None and mgr.prefix_cache_stats is None
    assert mgr.reset_prefix_cache()


def test_exact_block_multiple_prompt_loses_its_last_block():
    mgr = make_manager(20)
    mgr.allocate_slots(make_request("0", C3), 48)
    blocks, hit, _ = mgr.get_computed_blocks(make_request("1", C3))
    assert hit == 32 and ids(blocks) == [[1, 2]]


def test_sliding_window_frees_before_the_fit_check_even_when_refused():
    mgr = make_manager(4, groups=(("swa", 4),), bs=2)
    req = make_request("r", range(6), bs=2)
    assert ids(mgr.allocate_slots(req, 6)) == [[1, 2, 3]]
    req.num_computed_tokens = 6
    for t in (6, 7, 8):
        req.append_output_token_ids(t)
    # Tokens 0-2 left the window: block 1 is freed and nulled, then 2 blocks do not fit in 1.
    assert mgr.allocate_slots(req, 3) is None
    assert mgr.get_block_ids("r") == ([0, 2, 3],)
    assert mgr.block_pool.get_num_free_blocks() == 1
    # One more token fits: the freed block 1 (still cached) is reused at the tail.
    assert mgr.allocate_slots(req, 1) is not None
    assert mgr.get_block_ids("r") == ([0, 2, 3, 1],)


def test_take_events_annotates_the_spec_kind():
    mgr = make_manager(20, groups=("full", ("swa", 32)), enable_kv_cache_events=True)
    mgr.allocate_slots(make_request("r", C3), 48)
    ev = mgr.take_events()
    assert [(e.group_idx, e.kv_cache_spec_kind, e.kv_cache_spec_sliding_window) for e in ev] \
        == [(0, "full_attention", None), (1, "sliding_window", 32)]
    assert ev[0].block_hashes == ev[1].block_hashes and len(ev[0].block_hashes) == 3


def test_evict_blocks_emits_removed_and_keeps_refs():
    mgr = make_manager(10, enable_kv_cache_events=True)
    req = make_request("r", C3)
    mgr.allocate_slots(req, 48)
    mgr.take_events()
    mgr.evict_blocks({2, 9})  # 9 holds no hash: nothing for it
    assert mgr.take_events() == [BlockRemoved([hash_to_int(req.block_hashes[1])], "GPU", 0)]
    assert mgr.block_pool.blocks[2].ref_cnt == 1
    assert mgr.get_computed_blocks(make_request("s", C3 + [1]))[1] == 16


def test_tracer_sees_allocate_touch_cache_free_in_order():
    tracer = RecordingTracer()
    mgr = make_manager(8, tracer=tracer)
    r0 = make_request("0", C3 + [3])
    tracer.req = "0"
    mgr.allocate_slots(r0, 49)
    r1 = make_request("1", C3 + [4] * 5)
    tracer.req = "1"
    blocks, hit, _ = mgr.get_computed_blocks(r1)
    mgr.allocate_slots(r1, 5, hit, blocks)
    tracer.req = "0"
    mgr.free(r0)
    recs = tracer.take()
    h = r0.block_hashes
    assert recs == [
        ("allocate", "0", 0, [1, 2, 3, 4]),
        ("cache", "0", 0, [1, 2, 3], h[:3]),
        ("touch", "1", 0, [1, 2, 3], h[:3]),
        ("allocate", "1", 0, [5]),
        # r0 releases tail first; only its unshared block 4 reaches 0, and it has no hash.
        ("free", "0", 0, [4, 3, 2, 1], [4], []),
    ]


def test_views_and_list_constructor():
    groups = [KVCacheGroupSpec(("l0",), FullAttentionSpec(block_size=16))]
    mgr = KVCacheManager(groups, 1024, num_blocks=11)
    assert mgr.hash_block_size == 16 and mgr.scheduler_block_size == 16
    req = make_request("r", C3 + [1])
    mgr.allocate_slots(req, 49)
    assert mgr.get_block_ids("r") == ([1, 2, 3, 4],) and mgr.usage == pytest.approx(0.4)
    assert mgr.get_num_common_prefix_blocks("r") == [0]
    assert mgr.get_blocks("missing") is mgr.empty_kv_cache_blocks
    mgr.free(req)
    assert mgr.usage == 0.0 and mgr.get_block_ids("r") == ([],)
    with pytest.raises(ValueError):
        KVCacheManager(groups, 1024)


def test_block_stored_carries_lora_and_untagged_extra_keys():
    from kvcore.request import LoRARequest
    mgr = make_manager(10, enable_kv_cache_events=True)
    req = make_request("r", C3, lora_request=LoRARequest("sql", 42, "/p"), cache_salt="s",
                       session_id="sess")
    mgr.allocate_slots(req, 48)
    (ev,) = mgr.take_events()
    assert isinstance(ev, BlockStored)
    assert (ev.lora_id, ev.lora_name, ev.session_id) == (42, "sql", "sess")
    assert ev.extra_keys == [("sql", "s"), ("sql",), ("sql",)]
