"""`StepRecord`: what the CPU tier did in one engine step, for the step line and the totals.

Filled by the connector as it works (`connector.py`, `stores.py`) and read by the engine loop
once per step (`reset()` then starts the next). Keys are vLLM's chunk keys (bytes); the step
line writes them as the 64-bit ints of vLLM's KV events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kvcore.prefix_cache_stats import PrefixCacheStats


@dataclass(slots=True)
class StepRecord:
    lookups: dict[str, list[int]] = field(default_factory=dict)   # req -> [gpu hit, cpu hit]
    deferred: list[str] = field(default_factory=list)             # lookups that said "not yet"
    # the async lookup delays this step opened (a request's first "not yet" of its lookup) and
    # closed (its next lookup that answered), vLLM's `kv_offload_lookup_async_delay_seconds`
    delays_opened: list[str] = field(default_factory=list)
    delays_closed: list[str] = field(default_factory=list)
    # req -> [first, n, absent]; several groups: {"chunks": {group: [chunk]}, "n_absent": k};
    # with a Mamba group, a list of those (one per `prepare_store`)
    offers: dict[str, Any] = field(default_factory=dict)
    evicted: list[bytes] = field(default_factory=list)
    alloc_failures: list[str] = field(default_factory=list)
    chunks_stored: int = 0
    chunks_loaded: int = 0

    def reset(self) -> None:
        # (only what the step filled: most steps fill nothing)
        if self.lookups:
            self.lookups = {}
        if self.deferred:
            self.deferred = []
        if self.delays_opened:
            self.delays_opened = []
        if self.delays_closed:
            self.delays_closed = []
        if self.offers:
            self.offers = {}
        if self.evicted:
            self.evicted = []
        if self.alloc_failures:
            self.alloc_failures = []
        self.chunks_stored = 0
        self.chunks_loaded = 0


class ConnectorPrefixStats:
    """vLLM's ``connector_prefix_cache_stats``, summed over the run: per admission that looked
    up, queries = tokens past the GPU hit, hits = tokens the tier loads (vLLM's
    `PrefixCacheStats` counters); re-admissions after a preemption go to ``preempted_*``, the
    others' hits are also counted by source (`hits_by_source`, in first-seen order as vLLM's
    dicts sum them): ``host`` for the tokens the load's chunks cover, ``external_unspecified``
    for a hit no chunk of the load covers (its GPU blocks were hashed already: vLLM's
    `get_external_cache_hit_sources`, offloading/scheduler.py:1304-1350)."""

    __slots__ = ("counts", "sources")

    def __init__(self) -> None:
        self.counts = PrefixCacheStats()
        self.sources: dict[str, int] = {}

    def record(self, queries: int, hits: int, preempted: bool, host: int | None = None) -> None:
        """``host``: the hit tokens the load's chunks cover (None: all of them)."""
        self.counts.record(queries, hits, preempted)
        if preempted or not hits:
            return
        host = hits if host is None else host
        for src, n in (("external_unspecified", hits - host), ("host", host)):
            if n:       # (uncovered tokens come first: the load's chunks end the hit)
                self.sources[src] = self.sources.get(src, 0) + n

    def to_json(self) -> dict:
        c = self.counts
        return {"requests": c.requests, "queries": c.queries, "hits": c.hits,
                "preempted_requests": c.preempted_requests,
                "preempted_queries": c.preempted_queries, "preempted_hits": c.preempted_hits,
                "hits_by_source": dict(self.sources)}
