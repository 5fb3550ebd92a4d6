"""`round_robin`: request k goes to replica k mod N.

Source: vLLM production-stack `RoundRobinRouter` (`src/vllm_router/routers/routing_logic.py`:
a counter over the sorted endpoint list) and Dynamo's default `--router-mode round_robin`.
Divergence: none (replicas are numbered 0..N-1, the sorted list).
"""

from __future__ import annotations

from kvcore.cluster.router import Decision, Router, RouteRequest, register
from kvcore.cluster.view import ClusterView


@register
class RoundRobin(Router):
    name = "round_robin"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.next = 0

    def route(self, req: RouteRequest, view: ClusterView) -> Decision:
        i = self.next
        self.next = (i + 1) % self.n
        return Decision(i, "round_robin")
