"""`ClusterView`: everything a router may read when it decides, and nothing more.

* `metrics[i]`: replica i's scraped metrics (`Metrics`), sampled every `metrics_interval_ms`
  of simulated time (as llm-d scrapes vLLM's `/metrics`, and vLLM's DP coordinator publishes
  its counts): stale by up to one interval. Before the first sample every replica reads zero.
* router-local counters, fresh (a router counts what it sends): `in_flight[i]` routed and not
  finished, `prefilling[i]` routed and no first token yet, `prefill_tokens[i]` the prompt
  tokens of those, `routed[i]` every request routed there so far.
* `true_hits(req)`: the tokens each replica would hit for `req` now (replica i's at [i]): vLLM's
  `get_computed_blocks` on that replica's cache (read-only; capped at the prompt's length - 1).
  Only the `oracle` router and the report read these hits: no real router can.
* `events`: the `EventIndex` fed by the replicas' vLLM KV events after `kv_event_lag_ms`
  (None unless the router `needs_events`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvcore.cluster.event_index import EventIndex

if TYPE_CHECKING:
    from kvcore.cluster.router import RouteRequest


@dataclass(slots=True)
class Metrics:
    """One replica's metrics as a scrape sees them (vLLM's `num_requests_waiting`,
    `num_requests_running`, `kv_cache_usage_perc` as a fraction)."""

    waiting: int = 0
    running: int = 0
    kv_usage: float = 0.0
    t_ms: float = 0.0           # when it was sampled


class ClusterView:
    __slots__ = ("_hit", "block_size", "events", "in_flight", "metrics", "n", "now_ms",
                 "num_blocks", "prefill_tokens", "prefilling", "routed")

    def __init__(self, n: int, block_size: int, num_blocks: int,
                 hit: Callable[[int, RouteRequest], int],
                 events: EventIndex | None = None) -> None:
        self.n = n
        self.block_size = block_size
        self.num_blocks = num_blocks        # each replica's usable blocks
        self.now_ms = 0.0
        self.metrics = [Metrics() for _ in range(n)]
        self.in_flight = [0] * n
        self.prefilling = [0] * n
        self.prefill_tokens = [0] * n
        self.routed = [0] * n
        self.events = events
        self._hit = hit

    def true_hits(self, req: RouteRequest) -> list[int]:
        return [self._hit(i, req) for i in range(self.n)]
