"""`random`: a replica drawn uniformly with the router's seeded generator (`--seed`).

Source: llm-d's `random` picker, Vidur's and LLMServingSim's RAND. Divergence: none.
"""

from __future__ import annotations

from kvcore.cluster.router import Decision, Router, RouteRequest, register
from kvcore.cluster.view import ClusterView


@register
class RandomRouter(Router):
    name = "random"
    draws_random = True

    def route(self, req: RouteRequest, view: ClusterView) -> Decision:
        return Decision(self.rng.randrange(self.n), "random")
