"""`llmd_precise`: llm-d's precise prefix-cache profile: the prefix score comes from an index fed
by the replicas' vLLM KV events, plus the KV-utilization and queue scores, highest total wins.

Sources: llm-d/llm-d-inference-scheduler @520af478
`pkg/epp/framework/plugins/scheduling/scorer/preciseprefixcache/{precise_prefix_cache.go,utils.go}`
(score = min(1, weighted match / total blocks)), llm-d/llm-d-kv-cache `pkg/kvcache/kvblock_scorer.go`
(`LongestPrefixScorer`: walk the request's block keys from the first while the pod holds each
one on some tier, adding the pod's best tier weight per block (the largest weight of the tiers
holding it): gpu 1.0, cpu 0.8), and the
sample profile `deploy/config/epp-precise-prefix-cache-config.yaml` (precise-prefix-cache-scorer
2, kv-cache-utilization-scorer 1, queue-scorer 1, max-score-picker). The queue and
KV-utilization scorers and the picker are `llmd`'s.

Divergences: the index is kvcli's `EventIndex` (vLLM `BlockStored` / `BlockRemoved` per
replica, delivered after `--kv-event-lag-ms`), keyed by the engine's own 64-bit block hashes,
so the router block is the engine block (llm-d requires its token block size to equal
vLLM's). Speculative indexing (off upstream by default) is not modelled. `predicted_hit` counts
GPU-resident blocks only (the true hit it is compared with is the GPU prefix cache's).
"""

from __future__ import annotations

from typing import ClassVar

from kvcore.cluster.history import predicted_tokens
from kvcore.cluster.router import Decision, Option, Router, RouteRequest, register
from kvcore.cluster.routers.llmd import (
    kv_util_scores,
    queue_scores,
    scored_decision,
)
from kvcore.cluster.view import ClusterView


@register
class LlmdPrecise(Router):
    name = "llmd_precise"
    draws_random = True
    reads_metrics = True
    needs_events = True
    OPTIONS: ClassVar[dict[str, Option]] = {
        "prefix_weight": Option(float, 2.0, "precise-prefix-cache-scorer weight", lo=0),
        "kv_util_weight": Option(float, 1.0, "kv-cache-utilization-scorer weight", lo=0),
        "queue_weight": Option(float, 1.0, "queue-scorer weight", lo=0),
        "gpu_weight": Option(float, 1.0, "per-block weight of a GPU-resident block", lo=0),
        "cpu_weight": Option(float, 0.8, "per-block weight of a CPU-resident block", lo=0),
    }

    def weighted_match(self, replica: int, hashes: list[int], view: ClusterView
                       ) -> tuple[float, int]:
        """(weighted blocks, GPU blocks) of `replica`'s longest prefix over both tiers."""
        events = view.events
        assert events is not None, "llmd_precise needs the event index (needs_events)"
        gpu, cpu = events.gpu[replica], events.cpu[replica]
        gpu_w, cpu_w = self.opts["gpu_weight"], self.opts["cpu_weight"]
        cpu_better = cpu_w > gpu_w      # (only then does a GPU block's CPU copy matter)
        weighted, on_gpu, gpu_run = 0.0, 0, True
        for h in hashes:
            if h in gpu:
                # a block on both tiers counts its best tier's weight (upstream's
                # fillMaxWeights), whichever tier that is
                weighted += cpu_w if cpu_better and h in cpu else gpu_w
                if gpu_run:
                    on_gpu += 1
            elif h in cpu:
                weighted += cpu_w
                gpu_run = False     # the GPU prefix ends here; the walk goes on
            else:
                break
        return weighted, on_gpu

    def route(self, req: RouteRequest, view: ClusterView) -> Decision:
        o = self.opts
        hashes = req.block_hashes
        total = len(hashes)
        prefix, predicted = [], []
        for i in range(self.n):
            weighted, on_gpu = self.weighted_match(i, hashes, view)
            prefix.append(min(1.0, weighted / total) if total else 0.0)
            predicted.append(predicted_tokens(on_gpu, self.block_size, req.prompt_len))
        parts = {
            "precise-prefix-cache-scorer": (o["prefix_weight"], prefix),
            "kv-cache-utilization-scorer": (o["kv_util_weight"],
                                            kv_util_scores([m.kv_usage for m in view.metrics])),
            "queue-scorer": (o["queue_weight"], queue_scores([m.waiting for m in view.metrics])),
        }
        return scored_decision(parts, self.n, self.rng, predicted)
