"""Golden routing decisions of SGLang's router (the AND of its thresholds, its tree's
eviction, its presets) and AIBrix's (the sigma gate, match then running, the imbalance rule),
on hand-built views (`test_routers.py` has the others)."""

import pytest
from router_helpers import mk, req, routed, view

# --- SGLang -----------------------------------------------------------------------------------

@pytest.mark.parametrize("loads, imbalanced", [
    ([200, 270], False),    # only abs: 70 > 64, but 270 <= 1.5 * 200
    ([0, 10], False),       # only rel: 10 > 1.5 * 0, but 10 - 0 <= 64
    ([100, 170], True),     # both
])
def test_sglang_imbalance_needs_both_thresholds(loads, imbalanced):
    router, v = mk("sglang", n=2), view(2)
    routed(router, req(range(1, 11)), 1, v)         # the tree says replica 1 holds it
    v.in_flight[:] = loads
    d = router.route(req(range(1, 11)), v)
    assert (d.replica, d.reason) == ((0, "imbalance") if imbalanced else (1, "best_prefix"))


def test_sglang_threshold_min_load_and_the_deepest_nodes_tenant():
    router, v = mk("sglang", n=3), view(3)
    routed(router, req(range(1, 4)), 2, v)          # 3 of 10 blocks: rate 0.3, not > 0.3
    v.in_flight[:] = [4, 1, 1]
    d = router.route(req(range(1, 11)), v)
    assert (d.replica, d.reason, d.predicted_hit) == (1, "below_threshold", 0)
    routed(router, req(range(1, 5)), 0, v)          # 4 of 10: 0.4 -> block 4's creator
    d = router.route(req(range(1, 11)), v)
    assert (d.replica, d.reason, d.predicted_hit) == (0, "best_prefix", 64)


def test_sglang_prefix_stays_with_the_worker_that_created_its_node():
    # tree.rs names the tenant cached on the deepest matched node: the one whose insert made
    # it, not the latest (kvcli followed the latest route, and picked replica 1 here)
    router, v = mk("sglang", n=2), view(2)
    first = router.route(req([1, 2, 3]), v)          # empty tree: min load, replica 0
    routed(router, req([1, 2, 3]), first.replica, v)
    v.in_flight[:] = [1, 0]
    longer = req([1, 2, 3, *range(10, 27)])          # 3 of 20 blocks: below the threshold
    second = router.route(longer, v)
    assert (first.replica, second.replica, second.reason) == (0, 1, "below_threshold")
    routed(router, longer, 1, v)                     # blocks 1-3 now on both, 1 the latest
    v.in_flight[:] = [1, 1]
    d = router.route(req([1, 2, 3]), v)
    assert (d.replica, d.reason) == (0, "best_prefix")


def test_sglang_node_whose_creator_left_names_another_holder():
    router, v = mk("sglang", n=3), view(3)
    routed(router, req([1, 2]), 2, v)
    routed(router, req([1, 2]), 1, v)
    router.tree.trim(2, 0)                           # the creator's part of the tree evicted
    assert router.route(req([1, 2]), v).replica == 1
    routed(router, req([1, 2]), 2, v)                # back on 2: the name stays with 1
    assert router.route(req([1, 2]), v).replica == 1


def test_sglang_eviction_drops_leaves_first_at_the_interval():
    router = mk("sglang", n=2, max_tree_size=128, eviction_interval_secs=1)  # 2 blocks
    routed(router, req([1, 2, 3, 4]), 0, view(2))
    router.route(req([7]), view(2, now_ms=999.0))
    assert router.tree.match(0, [1, 2, 3, 4]) == 4
    router.route(req([7]), view(2, now_ms=1000.0))
    assert router.tree.match(0, [1, 2, 3, 4]) == 2


def test_sglang_presets():
    assert mk("sglang", preset="library").opts["cache_threshold"] == 0.5
    lib = mk("sglang", preset="library", cache_threshold=0.7).opts
    assert (lib["cache_threshold"], lib["balance_abs_threshold"]) == (0.7, 32)
    assert mk("sglang").opts["balance_rel_threshold"] == 1.5
    # a value given explicitly stays, even when it equals the CLI default
    explicit = mk("sglang", preset="library", cache_threshold=0.3, balance_abs_threshold=64).opts
    assert (explicit["cache_threshold"], explicit["balance_abs_threshold"],
            explicit["balance_rel_threshold"]) == (0.3, 64, 1.1)


# --- AIBrix -----------------------------------------------------------------------------------

def aibrix_with(loads, holders, n=3):
    router, v = mk("aibrix", n=n), view(n)
    for replica, hashes in holders.items():
        routed(router, req(hashes), replica, v)
    v.in_flight[:] = loads
    return router, v


def test_aibrix_sigma_gate_uses_the_sample_deviation():
    # mean 3, sample sd 3: limit 6 lets the r=6 holder in (the population sd would not)
    router, v = aibrix_with([0, 3, 6], {2: range(1, 5)})
    d = router.route(req(range(1, 5)), v)
    assert (d.replica, d.reason, d.predicted_hit) == (2, "best_prefix", 63)
    # mean 3.33, sd 3.51: limit 6.85 < 7 -> least request
    router, v = aibrix_with([0, 3, 7], {2: range(1, 5)})
    assert router.route(req(range(1, 5)), v).replica == 0
    assert router.route(req(range(1, 5)), v).reason == "sigma_gate"


def test_aibrix_order_by_match_then_running():
    router, v = aibrix_with([0, 3, 1], {1: range(1, 5), 2: range(1, 5)})
    assert router.route(req(range(1, 5)), v).replica == 2
    router, v = aibrix_with([1, 1, 0], {1: range(1, 5), 2: range(1, 3)})
    d = router.route(req(range(1, 8)), v)
    assert d.scores["match_percent"] == [0.0, 57.0, 28.0]     # 4*100//7, 2*100//7
    assert d.replica == 1                           # the better match, though busier
    # mean 1/3, sd 0.58: the best match (r=1) is over the gate, the next one is taken
    router, v = aibrix_with([0, 1, 0], {1: range(1, 5), 2: range(1, 3)})
    assert router.route(req(range(1, 8)), v).replica == 2


def test_aibrix_imbalance_restricts_candidates_and_ttl():
    router, v = aibrix_with([0, 0, 9], {1: range(1, 3), 2: range(1, 5)})
    d = router.route(req(range(1, 5)), v)
    assert (d.replica, d.reason) == (1, "imbalance")
    late = view(3, now_ms=20 * 60_000.0 + 1.0)
    assert router.route(req(range(1, 5)), late).scores["match_percent"] == [0.0] * 3
