"""Routers against their reference rules (`routing-and-sweeps.md` and the upstream code it
names): each case a small crafted sequence where the wrong rule picks another replica."""

import io

import orjson
import pytest
from router_helpers import mk, req, routed, stored, view

from kvcore.cluster.event_index import EventIndex
from kvcore.cluster.run import ClusterOptions, run_cluster
from kvcore.engine.options import ReplayOptions


def test_llmd_autotune_lru_is_vllms_num_gpu_blocks_null_block_included():
    """llm-d's autoTune sizes a pod's LRU to the `num_gpu_blocks` label of vLLM's
    `cache_config_info`: the whole pool (kvcli's num_blocks), one more than its usable blocks.
    4 usable blocks: an LRU of 5 keeps all five hashes routed to replica 1, so its prefix
    score stays 1.0 and its emptier KV cache wins; an LRU of 4 dropped hash 1 (score 0.75)
    and sent the request to replica 0."""
    router, v = mk("llmd", n=2), view(2, num_blocks=4)
    for replica in (0, 1):
        routed(router, req([1, 2, 3, 4]), replica, v)
    routed(router, req([9]), 1, v)
    v.metrics[0].kv_usage = 0.2
    d = router.route(req([1, 2, 3, 4]), v)
    assert d.scores["prefix-cache-scorer"] == [1.0, 1.0]
    assert d.scores["total"] == pytest.approx([6.6, 7.0])
    assert (d.replica, d.reason) == (1, "best_score")


def test_llmd_precise_block_on_both_tiers_counts_its_best_tier():
    """LongestPrefixScorer takes, per block, the largest weight of the tiers holding it
    (fillMaxWeights). With the CPU tier weighted above the GPU (cpu 1.0, gpu 0.5), replica 0
    holding every block on both tiers scores 1.0 like replica 1 (CPU only), and its emptier
    KV cache wins; taking the GPU weight first scored it 0.5 and picked replica 1."""
    events = EventIndex(2)
    events.apply(0, [stored([1, 2, 3, 4]), stored([1, 2, 3, 4], "CPU")])
    events.apply(1, [stored([1, 2, 3, 4], "CPU")])
    router = mk("llmd_precise", n=2, gpu_weight=0.5, cpu_weight=1.0)
    v = view(2, events=events)
    v.metrics[1].kv_usage = 0.1
    d = router.route(req([1, 2, 3, 4]), v)
    assert d.scores["precise-prefix-cache-scorer"] == [1.0, 1.0]
    assert d.scores["total"] == pytest.approx([4.0, 3.9])
    assert (d.replica, d.predicted_hit) == (0, 63)      # GPU blocks only: 4 x 16, last token


def _dynamo_after_a_rejection(tmp_path) -> list[dict]:
    """a (t=0) caches prefix P (3 blocks) on some replica X; b (t=50) shares P, so Dynamo
    sends it to X, which rejects it (208 prompt tokens >= max_model_len 128); c (t=100)
    shares P too."""
    head = list(range(100, 148))
    lines = [{"id": "a", "timestamp": 0.0, "prompt_token_ids": head + list(range(1, 9)),
              "output_length": 2},
             {"id": "b", "timestamp": 50.0, "prompt_token_ids": head + list(range(2000, 2160)),
              "output_length": 2},
             {"id": "c", "timestamp": 100.0, "prompt_token_ids": head + list(range(3000, 3008)),
              "output_length": 2}]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    dec = io.BytesIO()
    res = run_cluster(str(path), ReplayOptions(num_blocks=64, block_size=16, max_model_len=128,
                                               skip_bad=True),
                      ClusterOptions(replicas=2, routers=(("dynamo", ()),)), decisions_out=dec)
    assert res["routers"][0]["rejected"] == 1
    return [orjson.loads(x) for x in dec.getvalue().splitlines()]


def test_dynamo_frees_a_rejected_request(tmp_path):
    """Dynamo frees a request's prefill tokens and blocks when its stream ends, an engine's
    rejection included. c's cost on X is 56/16 - 3 cached + 3 blocks = 3.5 against 6.5 on the
    other: X. Keeping b's 160 uncached tokens and 13 blocks charged forever made X cost 23.5
    and sent c away from its cached prefix."""
    a, b, c = _dynamo_after_a_rejection(tmp_path)
    x = a["replica"]
    assert b["replica"] == x and b["scores"]["overlap_blocks"][x] == 3.0
    assert c["replica"] == x and c["reason"] == "lowest_cost"
    costs = c["scores"]["cost"]
    assert (costs[x], costs[1 - x]) == (3.5, 6.5)
