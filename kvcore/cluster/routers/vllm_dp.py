"""`vllm_dp`: vLLM's internal data-parallel load balancer, the replica with the lowest load score
over the engines' published counts.

Source: vllm-project/vllm `vllm/v1/engine/core_client.py`, `DPLBAsyncMPClient.
get_core_engine_for_request` (vLLM 0.33, the version kvcli copies). The DP coordinator publishes
each engine's [waiting, running, kv_cache_usage] (every 100 ms while they change); between two
snapshots the client adds `client_count` to its local copy of the chosen engine's waiting count
(optimistic), and the next snapshot overwrites it. The scan starts at a rotating index and
keeps the first strict minimum, so equal scores go round robin.

`formula=v0.33` (default), per engine i:
    score_i = max(client_count * in_flight_i, waiting_i + running_i)
              + waiting_i * 6 * max(0, kv_usage_i - 0.5)           (only when waiting_i > 0)
    in_flight_i: requests this client routed to i and not finished (router-local, fresh);
    the scan start index moves by one after every decision.
`formula=legacy`: score_i = 4 * waiting_i + running_i from a fixed start index (0: client 0),
as earlier vLLM releases and the simulators quoting them (BLIS, LLMServingSim) have it.

Divergences: the snapshot is the cluster's scraped `view.metrics` (its interval is
`--metrics-interval-ms`; vLLM's coordinator publishes every 100 ms and only on change); a new
snapshot is seen when a replica's `t_ms` changes, and replaces that replica's local counts.
One API-server process (client_index 0) unless `client_count` says otherwise.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kvcore.cluster.router import Decision, Option, Router, RouteRequest, register
from kvcore.cluster.view import ClusterView

FORMULAS = ("v0.33", "legacy")


@register
class VllmDP(Router):
    name = "vllm_dp"
    reads_metrics = True
    OPTIONS: ClassVar[dict[str, Option]] = {
        "formula": Option(str, "v0.33", "v0.33 (max(in-flight, waiting+running) + KV-pressure "
                          "penalty, rotating start) or legacy (4*waiting + running)",
                          choices=FORMULAS),
        "client_count": Option(int, 1, "API-server processes sharing the engines "
                               "(vLLM's client_count)", lo=1),
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the client's copy of [waiting, running, kv_usage] per engine, and the sample time
        # it came from (a new sample replaces the optimistic bumps)
        self.counts: list[list[float]] = [[0, 0, 0.0] for _ in range(self.n)]
        self.seen_t: list[float | None] = [None] * self.n
        self.start = 0

    def _refresh(self, view: ClusterView) -> None:
        for i, m in enumerate(view.metrics):
            if m.t_ms != self.seen_t[i]:
                self.seen_t[i] = m.t_ms
                self.counts[i] = [m.waiting, m.running, m.kv_usage]

    def scores(self, view: ClusterView) -> list[float]:
        """Each engine's load score under the chosen formula (after `_refresh`)."""
        cc = self.opts["client_count"]
        out = []
        for i, (waiting, running, kv) in enumerate(self.counts):
            if self.opts["formula"] == "legacy":
                out.append(float(4 * waiting + running))
                continue
            score = float(max(cc * view.in_flight[i], waiting + running))
            if waiting:
                # a queue on a KV-bound engine drains slowly: penalise it from 50% usage up
                score += waiting * 6.0 * max(0.0, kv - 0.5)
            out.append(score)
        return out

    def route(self, req: RouteRequest, view: ClusterView) -> Decision:
        self._refresh(view)
        scores = self.scores(view)
        best, best_score = 0, float("inf")
        for k in range(self.n):
            i = (self.start + k) % self.n
            if scores[i] < best_score:
                best, best_score = i, scores[i]
        self.counts[best][0] += self.opts["client_count"]
        if self.opts["formula"] != "legacy":
            self.start = (self.start + 1) % self.n
        tie = scores.count(best_score) > 1
        return Decision(best, "tie" if tie else "least_load", scores={"load_score": scores})
