"""Property test: random op sequences keep the block pool's books straight after every op.

Invariants checked after each op:
* each non-null block's ref count = the number of live block tables (request x group) holding it;
* the free queue holds exactly the non-null blocks with ref count 0, each once, and its count
  matches its length;
* every block with a hash is in the map under (hash, group), and the map holds nothing else;
* free + held = num_blocks - 1 (the null block is neither).
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kvtest_helpers import make_manager, make_request

GROUPS = [("full",), ("full", ("swa", 8)), (("swa", 12),), ("full", "full", ("swa", 5))]


def check_invariants(mgr) -> None:
    pool = mgr.block_pool
    held = Counter()
    for m in mgr.coordinator.single_type_managers:
        for table in m.req_to_blocks.values():
            for b in table:
                if not b.is_null:
                    held[b.block_id] += 1
    for b in pool.blocks[1:]:
        assert b.ref_cnt == held[b.block_id], f"block {b.block_id}"
    queue = pool.free_block_queue.get_all_free_blocks()
    qids = [b.block_id for b in queue]
    assert len(qids) == len(set(qids)) == pool.free_block_queue.num_free_blocks
    assert set(qids) == {b.block_id for b in pool.blocks[1:] if b.ref_cnt == 0}
    assert 0 not in qids and pool.null_block.block_hash is None
    in_map = {(h, g, b.block_id) for h, g, blks in pool.cached_block_hash_to_block.items()
              for b in blks}
    hashed = {(b.block_hash, b.hash_group, b.block_id) for b in pool.blocks
              if b.block_hash is not None}
    assert in_map == hashed
    n_held = sum(1 for b in pool.blocks[1:] if b.ref_cnt > 0)
    assert pool.get_num_free_blocks() + n_held == pool.num_gpu_blocks - 1


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_ops_keep_the_invariants(data):
    bs = data.draw(st.sampled_from([2, 4]), label="block_size")
    groups = data.draw(st.sampled_from(GROUPS), label="groups")
    num_blocks = data.draw(st.integers(2, 40), label="num_blocks")
    mgr = make_manager(num_blocks, groups=groups, bs=bs, max_model_len=64)
    prefixes = [[1, 2, 3, 4, 5, 6, 7, 8], [9, 9, 9, 9, 1, 2], [1, 2, 3, 4, 7, 7]]
    live: dict[str, object] = {}
    counter = 0
    for _ in range(data.draw(st.integers(1, 40), label="steps")):
        op = data.draw(st.sampled_from(["new", "new", "prefill", "decode", "decode", "free",
                                        "evict", "reset"]))
        if op == "new":
            counter += 1
            prompt = data.draw(st.sampled_from(prefixes)) + data.draw(
                st.lists(st.integers(0, 3), min_size=0, max_size=12))
            if not prompt:
                continue
            req = make_request(f"r{counter}", prompt, bs=bs)
            blocks, hit, _ = mgr.get_computed_blocks(req)
            rest = req.num_tokens - hit
            n = data.draw(st.integers(1, rest)) if rest else 0
            if n == 0:
                continue
            must_fit = data.draw(st.booleans())
            if mgr.allocate_slots(req, n, hit, blocks, full_sequence_must_fit=must_fit):
                mgr.record_prefix_cache_stats(req, hit)
                req.num_computed_tokens = hit + n
                live[req.request_id] = req
        elif op in ("prefill", "decode") and live:
            req = live[data.draw(st.sampled_from(sorted(live)))]
            if req.num_computed_tokens < req.num_tokens:
                n = data.draw(st.integers(1, req.num_tokens - req.num_computed_tokens))
            elif req.num_tokens < 60:
                req.append_output_token_ids(data.draw(st.integers(0, 3)))
                n = 1
            else:
                continue
            if mgr.allocate_slots(req, n) is not None:
                req.num_computed_tokens += n
        elif op == "free" and live:
            mgr.free(live.pop(data.draw(st.sampled_from(sorted(live)))))
        elif op == "evict":
            mgr.evict_blocks(set(data.draw(st.lists(st.integers(0, num_blocks - 1),
                                                    max_size=4))))
        elif op == "reset":
            assert mgr.reset_prefix_cache() == (not live or all(
                not any(mgr.coordinator.get_blocks(r)) for r in live))
        check_invariants(mgr)
    for rid in list(live):
        mgr.free(live.pop(rid))
    check_invariants(mgr)
    assert mgr.block_pool.get_num_free_blocks() == num_blocks - 1
