"""`StepRecord`: what the CPU tier did in one engine step, for the step line and the totals.

Filled by the connector as it works (`connector.py`, `stores.py`) and read by the engine loop
once per step (`reset()` then starts the next). Keys are vLLM's chunk keys (bytes); the step
line writes them as the 64-bit ints of vLLM's KV events.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class StepRecord:
    lookups: dict[str, list[int]] = field(default_factory=dict)   # req -> [gpu hit, cpu hit]
    deferred: list[str] = field(default_factory=list)             # lookups that said "not yet"
    offers: dict[str, list[int]] = field(default_factory=dict)    # req -> [first, n, absent]
    evicted: list[bytes] = field(default_factory=list)
    alloc_failures: list[str] = field(default_factory=list)
    chunks_stored: int = 0
    chunks_loaded: int = 0

    def reset(self) -> None:
        self.lookups = {}
        self.deferred = []
        self.offers = {}
        self.evicted = []
        self.alloc_failures = []
        self.chunks_stored = 0
        self.chunks_loaded = 0


@dataclass(slots=True)
class ConnectorPrefixStats:
    """vLLM's ``connector_prefix_cache_stats``, summed over the run: per admission that looked
    up, queries = tokens past the GPU hit, hits = tokens the tier loads; re-admissions after a
    preemption in ``preempted_*``, the others' hits also by source (the CPU tier: ``host``)."""

    requests: int = 0
    queries: int = 0
    hits: int = 0
    preempted_requests: int = 0
    preempted_queries: int = 0
    preempted_hits: int = 0
    host_hits: int = 0

    def record(self, queries: int, hits: int, preempted: bool) -> None:
        if preempted:
            self.preempted_requests += 1
            self.preempted_queries += queries
            self.preempted_hits += hits
        else:
            self.requests += 1
            self.queries += queries
            self.hits += hits
            self.host_hits += hits

    def to_json(self) -> dict:
        return {"requests": self.requests, "queries": self.queries, "hits": self.hits,
                "preempted_requests": self.preempted_requests,
                "preempted_queries": self.preempted_queries,
                "preempted_hits": self.preempted_hits,
                "hits_by_source": {"host": self.host_hits} if self.host_hits else {}}
