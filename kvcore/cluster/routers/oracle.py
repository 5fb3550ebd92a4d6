"""`oracle`: the replica with the longest true prefix hit now, the fewest requests in flight on
ties, then the lowest index: the upper bound a prefix-aware router can reach at each decision.

It reads every replica's real prefix cache (`ClusterView.true_hits`: vLLM's
`get_computed_blocks`, read-only), which no deployed router can. Greedy per decision: it does
not plan for the requests to come, so it bounds the routers' hit at each decision, not the
trace's best routing: when every request shares a prefix (a common system prompt), the
replica that served the first one always has the longest hit, and everything herds there.
"""

from __future__ import annotations

from kvcore.cluster.router import Decision, Router, RouteRequest, register
from kvcore.cluster.view import ClusterView


@register
class OracleRouter(Router):
    name = "oracle"

    def route(self, req: RouteRequest, view: ClusterView) -> Decision:
        hits = view.true_hits(req)
        loads = view.in_flight
        best = min(range(self.n), key=lambda i: (-hits[i], loads[i], i))
        ties = sum(1 for i in range(self.n) if hits[i] == hits[best])
        reason = "best_prefix" if hits[best] > 0 and ties == 1 else \
            ("tie" if hits[best] > 0 else "least_load")
        return Decision(best, reason, scores={"true_hit": [float(h) for h in hits],
                                              "in_flight": [float(x) for x in loads]},
                        predicted_hit=hits[best])
