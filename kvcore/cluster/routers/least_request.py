"""`least_request`: the replica with the fewest requests in flight (router-local, fresh), the
lowest index on ties.

Source: SGLang router's and Envoy's least-request, production-stack's lowest load, BLIS's
`least-loaded`. In flight = routed and not finished (the router's own count, as a gateway keeps
it). Divergence: ties go to the lowest index (deterministic) rather than to a random one.
"""

from __future__ import annotations

from kvcore.cluster.router import Decision, Router, RouteRequest, register
from kvcore.cluster.view import ClusterView


@register
class LeastRequest(Router):
    name = "least_request"

    def route(self, req: RouteRequest, view: ClusterView) -> Decision:
        loads = view.in_flight
        best = min(range(self.n), key=loads.__getitem__)
        tie = loads.count(loads[best]) > 1
        return Decision(best, "tie" if tie else "least_load",
                        scores={"in_flight": [float(x) for x in loads]})
