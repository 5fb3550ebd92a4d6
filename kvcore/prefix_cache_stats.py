"""`PrefixCacheStats`: the prefix-cache counters `KVCacheManager` keeps (vLLM's
`vllm/v1/metrics/stats.py`, 0.33). `kvcore.kv_cache_manager` re-exports it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class PrefixCacheStats:
    """Prefix-cache counters since the last `make_prefix_cache_stats` (tokens, not blocks).

    A resumed (preempted) request's lookups go to the ``preempted_*`` counters.
    """

    reset: bool = False
    requests: int = 0
    queries: int = 0
    hits: int = 0
    preempted_requests: int = 0
    preempted_queries: int = 0
    preempted_hits: int = 0

    def record(self, num_tokens: int, num_hits: int, preempted: bool) -> None:
        if preempted:
            self.preempted_requests += 1
            self.preempted_queries += num_tokens
            self.preempted_hits += num_hits
        else:
            self.requests += 1
            self.queries += num_tokens
            self.hits += num_hits
