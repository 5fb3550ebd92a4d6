"""`power_of_two`: two distinct replicas drawn at random, the one with fewer requests in flight
(router-local), the first drawn on a tie.

Source: the power-of-two-choices rule as Ray Serve's default request router and its
`PrefixCacheAffinityRouter` fallback apply it (queue lengths of two sampled replicas).
Divergence: Ray Serve asks the two replicas for their queue length; here the router's own
in-flight count stands for it (what a gateway knows without a probe).
"""

from __future__ import annotations

from kvcore.cluster.router import Decision, Router, RouteRequest, register
from kvcore.cluster.view import ClusterView


@register
class PowerOfTwo(Router):
    name = "power_of_two"
    draws_random = True

    def route(self, req: RouteRequest, view: ClusterView) -> Decision:
        if self.n == 1:
            return Decision(0, "only")
        a, b = self.rng.sample(range(self.n), 2)
        loads = view.in_flight
        pick = b if loads[b] < loads[a] else a
        scores = [0.0] * self.n
        scores[a], scores[b] = float(loads[a]), float(loads[b])
        return Decision(pick, "tie" if loads[a] == loads[b] else "least_load",
                        scores={"in_flight_of_two": scores})
