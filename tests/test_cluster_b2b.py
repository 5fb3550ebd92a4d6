"""llm-d's B2B workload (`kvcli gen b2b`) behind 8 replicas: the blog's ordering of routers.

llm-d reports (blog 2025-09-24, 8 pods) precise prefix > approximate prefix > load / random on
this workload. A scaled-down copy (48 tenants x 4 users, 512-token contexts, 128-token queries,
160 blocks of 16 per replica, 800 requests at 40 QPS) under the async engine gives the same
order, with the oracle above all; see docs/cluster.md for the full-size run.
"""

from __future__ import annotations

import orjson

from kvcore.cluster.run import ClusterOptions, run_cluster
from kvcore.engine.gen_b2b import b2b
from kvcore.engine.options import ReplayOptions


def test_b2b_orders_precise_over_approximate_over_load(tmp_path):
    recs = b2b(tenants=48, users=4, context_tokens=512, query_tokens=128, output_tokens=64,
               requests=800, qps=(40.0,), seed=1)
    path = tmp_path / "b2b.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    names = ("random", "least_request", "llmd", "llmd_precise", "oracle")
    res = run_cluster(str(path), ReplayOptions(num_blocks=160, block_size=16),
                      ClusterOptions(replicas=8, routers=tuple((n, ()) for n in names)))
    hit = {r["router"]: r["hit_rate"] for r in res["routers"]}
    assert hit["oracle"] > hit["llmd_precise"] > hit["llmd"] > 2 * max(hit["least_request"],
                                                                       hit["random"])
    # every router sees the same trace: the same ceiling; what differs is where hits were lost
    ceilings = {r["trace_ceiling"] for r in res["routers"]}
    assert len(ceilings) == 1
    loss = {r["router"]: r["routing_loss"] for r in res["routers"]}
    assert loss["random"] > loss["llmd"] and loss["least_request"] > loss["llmd_precise"]
