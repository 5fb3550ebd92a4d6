"""Golden routing decisions for the load- and prefix-aware routers, from the peers' own worked
examples and rules (Dynamo's 2/5/8 example, llm-d's scorers, vLLM's DP balancer), on hand-built
views (SGLang and AIBrix: `test_routers_sglang_aibrix.py`)."""

import pytest
from router_helpers import BS, mk, req, routed, stored, view

from kvcore.cluster.event_index import EventIndex
from kvcore.cluster.router import REGISTRY, make_router, router_names
from kvcore.cluster.routers.dynamo import softmax_index, worker_cost
from kvcore.cluster.routers.llmd import kv_util_scores, load_aware_scores, queue_scores
from kvcore.errors import InputError
from kvcore.kv_events import BlockRemoved

# --- Dynamo -----------------------------------------------------------------------------------

def test_dynamo_worked_example_costs_18_10_11_pick_worker_1():
    # docs "Routing Concepts": 10-block request, cached 2/5/8 -> prefill 8/5/2, decode 10/5/9
    costs = [worker_cost(10, cached, decode) for cached, decode in ((2, 10), (5, 5), (8, 9))]
    assert costs == [18.0, 10.0, 11.0]
    assert costs.index(min(costs)) == 1


def test_dynamo_route_overlap_from_events_and_local_load():
    events = EventIndex(3)
    hashes = list(range(1, 11))
    for i, k in enumerate((2, 5, 8)):
        events.apply(i, [stored(hashes[:k])])
    router, v = mk("dynamo"), view(3, events=events)
    a = req(hashes, rid="a")
    d = router.route(a, v)          # no load yet: 8+10, 5+10, 2+10
    assert d.scores["cost"] == [18.0, 15.0, 12.0]
    assert (d.replica, d.reason, d.predicted_hit) == (2, "lowest_cost", 128)
    routed(router, a, 2, v)         # charges 160 - 8*16 = 32 prefill tokens, 10 active blocks
    d = router.route(req(hashes, rid="b"), v)
    assert d.scores["prefill_blocks"] == [10.0, 10.0, 12.0]
    assert d.scores["cost"] == [18.0, 15.0, 14.0]
    other = req([91, 92], rid="c")
    assert router.route(other, v).scores["decode_blocks"] == [2.0, 2.0, 12.0]
    router.on_first_token("a", 2, 1.0)
    assert router.route(req(hashes, rid="b"), v).scores["cost"] == [18.0, 15.0, 12.0]
    routed(router, req(hashes, rid="b"), 2, v)     # shared blocks count once
    assert router.route(req(hashes), v).scores["decode_blocks"][2] == 10.0
    router.on_finished("a", 2, 2.0)
    router.on_finished("b", 2, 2.0)
    assert router.blocks[2] == {} and router.prefill_tokens == [0, 0, 0]


def test_dynamo_tie_is_random_and_seeded():
    picks = [mk("dynamo", seed=s).route(req([1]), view(3, events=EventIndex(3))).replica
             for s in range(12)]
    assert len(set(picks)) > 1
    assert picks == [mk("dynamo", seed=s).route(req([1]), view(3, events=EventIndex(3))).replica
                     for s in range(12)]


def test_dynamo_softmax_over_min_max_normalized_costs():
    # costs 0 and 1 at T=1: p0 = 1 / (1 + e^-1) = 0.731
    assert softmax_index([0.0, 1.0], 1.0, 0.73) == 0
    assert softmax_index([0.0, 1.0], 1.0, 0.74) == 1
    assert softmax_index([5.0, 5.0], 1.0, 0.5) == 0     # equal costs: uniform
    assert softmax_index([5.0, 5.0], 1.0, 0.51) == 1
    d = mk("dynamo", router_temperature=0.5).route(req([1]), view(3, events=EventIndex(3)))
    assert d.reason == "sampled"


def test_dynamo_without_events_predicts_from_its_routing_with_ttl():
    router = mk("dynamo", use_kv_events="false")
    v = view(3)
    a = req(range(1, 11), rid="a")
    first = router.route(a, v)
    assert first.reason == "tie"
    routed(router, a, first.replica, v)
    router.on_first_token("a", first.replica, 1.0)
    d = router.route(req(range(1, 11)), v)
    assert (d.replica, d.reason) == (first.replica, "lowest_cost")
    assert d.scores["overlap_blocks"][first.replica] == 10.0
    later = view(3, now_ms=120_001.0)
    assert router.route(req(range(1, 11)), later).scores["overlap_blocks"] == [0.0] * 3


# --- vLLM DP ----------------------------------------------------------------------------------

def test_vllm_dp_legacy_4q_plus_r_with_optimistic_waiting():
    router, v = mk("vllm_dp", formula="legacy"), view(3)
    for i, (w, r) in enumerate(((1, 0), (0, 3), (0, 2))):
        v.metrics[i].waiting, v.metrics[i].running, v.metrics[i].t_ms = w, r, 100.0
    d = router.route(req([1]), v)
    assert (d.replica, d.scores["load_score"]) == (2, [4.0, 3.0, 2.0])
    # same sample: the chosen replica's waiting count was bumped locally (2 -> 6)
    assert [router.route(req([1]), v).replica for _ in range(2)] == [1, 0]
    for m in v.metrics:
        m.t_ms = 200.0              # a fresh sample replaces the bumps
    assert router.route(req([1]), v).scores["load_score"] == [4.0, 3.0, 2.0]


def test_vllm_dp_rotating_start_spreads_equal_scores():
    def picks(formula):
        router, v = mk("vllm_dp", formula=formula), view(3)
        out = []
        for t in range(4):
            for m in v.metrics:
                m.t_ms = float(t + 1)   # a fresh all-zero sample each time
            out.append(router.route(req([1]), v).replica)
        return out
    assert picks("v0.33") == [0, 1, 2, 0]
    assert picks("legacy") == [0, 0, 0, 0]


def test_vllm_dp_v033_score_in_flight_floor_and_kv_penalty():
    router, v = mk("vllm_dp"), view(3)
    for i, (w, r, kv) in enumerate(((2, 1, 0.9), (0, 5, 0.0), (1, 6, 0.5))):
        m = v.metrics[i]
        m.waiting, m.running, m.kv_usage, m.t_ms = w, r, kv, 50.0
    v.in_flight[:] = [0, 7, 0]
    d = router.route(req([1]), v)
    # 3 + 2*6*0.4, max(7 in flight, 5), 7 + no penalty at 50% usage
    assert d.scores["load_score"] == pytest.approx([7.8, 7.0, 7.0])
    assert (d.replica, d.reason) == (1, "tie")


# --- llm-d ------------------------------------------------------------------------------------

def test_llmd_scorers():
    assert queue_scores([3, 3, 3]) == [1.0, 1.0, 1.0]
    assert queue_scores([0, 5, 10]) == [1.0, 0.5, 0.0]
    assert kv_util_scores([0.25, 1.0]) == [0.75, 0.0]
    assert load_aware_scores([0, 64, 128, 500]) == [0.5, 0.25, 0.0, 0.0]


def test_llmd_learns_from_routing_history():
    router, v = mk("llmd"), view(3)
    first = router.route(req(range(1, 5)), v)
    assert first.reason == "tie" and first.scores["total"] == [4.0, 4.0, 4.0]
    routed(router, req(range(1, 5)), first.replica, v)
    d = router.route(req(range(1, 5), prompt_len=64), v)
    assert (d.replica, d.reason, d.predicted_hit) == (first.replica, "best_score", 63)
    assert d.scores["total"][first.replica] == 7.0


def test_llmd_router_block_is_every_mth_engine_hash():
    router, v = mk("llmd", n=2, auto_tune="false", block_size_tokens=32), view(2)
    routed(router, req(range(1, 9)), 1, v)          # router hashes 2, 4, 6, 8
    d = router.route(req([1, 2, 3, 4, 90, 91, 92, 93]), v)  # router hashes 2, 4, 91, 93
    assert d.scores["prefix-cache-scorer"] == [0.0, 0.5]
    assert (d.replica, d.predicted_hit) == (1, 64)


def test_llmd_lru_is_the_replica_num_blocks_and_counts_past_a_lost_first_block():
    router, v = mk("llmd", n=3), view(3, num_blocks=3)     # 3 usable: a pool of 4
    for replica in (0, 1):
        routed(router, req([1, 2, 3, 4]), replica, v)
    routed(router, req([9]), 1, v)                  # replica 1's LRU drops hash 1
    d = router.route(req([1, 2, 3, 4]), v)
    assert d.scores["prefix-cache-scorer"] == [1.0, 0.75, 0.0]


def test_llmd_precise_weights_tiers_from_kv_events():
    events = EventIndex(3)
    events.apply(0, [stored([1, 2, 3, 4])])
    events.apply(1, [stored([1, 2]), stored([3, 4], "CPU")])
    events.apply(2, [stored([2, 3, 4])])            # no first block: no prefix
    router, v = mk("llmd_precise"), view(3, events=events)
    d = router.route(req([1, 2, 3, 4]), v)
    assert d.scores["precise-prefix-cache-scorer"] == pytest.approx([1.0, 0.9, 0.0])
    assert d.scores["total"] == pytest.approx([4.0, 3.8, 2.0])
    assert (d.replica, d.predicted_hit) == (0, 63)
    events.apply(0, [BlockRemoved([3, 4], "GPU")])
    d = router.route(req([1, 2, 3, 4]), v)
    assert (d.replica, d.predicted_hit) == (1, 32)


# --- common -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", router_names())
def test_same_seed_same_decisions_and_only_a_drawing_router_hears_the_seed(name):
    """Same seed, same 30 decisions; another seed changes them for a router that draws from its
    rng (`draws_random`: random, power_of_two and the tie-breaking prefix routers) and not for
    one that does not (`kvcli cluster` warns that --seed has no effect there)."""
    def run(seed):
        router, v = mk(name, n=4, seed=seed), view(4, events=EventIndex(4))
        out = []
        for k in range(30):
            r = req([k % 3, 10 + k % 5], rid=f"r{k}", index=k)
            d = router.route(r, v)
            routed(router, r, d.replica, v)
            v.in_flight[d.replica] += 1
            out.append(d.replica)
        return out
    assert run(7) == run(7)
    if REGISTRY[name].draws_random:
        assert run(8) != run(7)
    else:
        assert run(8) == run(7)


@pytest.mark.parametrize("name, opts", [
    ("llmd", {"auto_tune": "false", "block_size_tokens": "24"}),
    ("llmd", {"queue_weight": "heavy"}),
    ("llmd", {"prefix_weight": "-1"}),
    ("vllm_dp", {"formula": "p2c"}),
    ("dynamo", {"router_temperature": "-0.5"}),
    ("dynamo", {"use_kv_events": "maybe"}),
    ("sglang", {"preset": "server"}),
    ("sglang", {"cache_threshold": "1.5"}),
    ("llmd", {"prefix_weight": "inf"}),
    ("aibrix", {"standard_deviation_factor": "Infinity"}),
    ("dynamo", {"prefill_load_scale": "-inf"}),
    ("aibrix", {"block_number": "0"}),
    ("aibrix", {"no_such_option": "1"}),
])
def test_bad_router_opt_names_router_opt(name, opts):
    with pytest.raises(InputError) as err:
        make_router(name, 3, opts, 0, BS)
    assert err.value.field == "router_opt"


def test_router_opts_repeated_the_same_way_are_refused_and_router_key_wins():
    """The last of two `--router-opt prefix_weight=...` won without a word; ROUTER.KEY beside a
    bare KEY wins in either order."""
    from kvcore.cluster.router_opts import parse_router_opts

    with pytest.raises(InputError) as err:
        parse_router_opts(["llmd"], ["prefix_weight=2", "prefix_weight=3"])
    assert (err.value.field, err.value.message) == (
        "router_opt", ("llmd's option 'prefix_weight' given twice ('prefix_weight=2' and "
                       "'prefix_weight=3')"))
    with pytest.raises(InputError, match="given twice"):
        parse_router_opts(["llmd", "random"], ["llmd.prefix_weight=2", "llmd.prefix_weight=2"])
    for raw in (["prefix_weight=2", "llmd.prefix_weight=5"],
                ["llmd.prefix_weight=5", "prefix_weight=2"]):
        assert parse_router_opts(["llmd", "dynamo"], raw) == (
            ("llmd", (("prefix_weight", "5"),)), ("dynamo", ()))
