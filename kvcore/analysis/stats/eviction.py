"""Eviction churn: how many cached blocks were evicted, how long they lived, how idle they were,
and whether the cache regretted it.

Only blocks that held a hash are counted (an `evict` always names one), so never-cached scratch
blocks do not pollute the distributions. All ages are in engine steps (cache mode: requests):
* lifetime = evict step - the step the block was allocated (fresh, by any request);
* idle before evict = evict step - the step its ref count last reached 0;
* age at eviction = evict step - the step its hash was registered (`cache`);
* regret = an evicted hash registered again later (it was needed and had to be recomputed);
  `regret_gap` = steps from the eviction to that re-registration.
"""

from __future__ import annotations

from collections import Counter

from kvcore.analysis.stats.bulk import BulkDist
from kvcore.analysis.stats.dist import Dist


class EvictionStats:
    def __init__(self) -> None:
        self.evictions = 0
        self.lifetime = BulkDist()    # one value per evicted block: counted in bulk
        self.idle = BulkDist()
        self.age_at_evict = BulkDist()
        self.evicted_in_use = 0       # evict of a referenced block (evict_blocks / reset), no idle
        self.regret_evictions = 0
        self.regret_tokens = 0
        self.regret_gap = BulkDist()
        self.by_req: Counter = Counter()   # evicting request (index) -> blocks

    def to_json(self, requests: int, t_ms: float, age_at_hit: Dist, top: int, series: dict,
                name) -> dict:
        hit_p50 = age_at_hit.summary()["p50"]
        younger = None
        if hit_p50 is not None and self.evictions:
            younger = sum(c for a, c in self.age_at_evict.counts.items() if a < hit_p50) / max(
                1, len(self.age_at_evict))
        return {
            "evictions": self.evictions,
            "per_1000_requests": self.evictions * 1000 / requests if requests else None,
            "per_minute": self.evictions * 60000 / t_ms if t_ms > 0 else None,
            "lifetime_steps": {**self.lifetime.summary(), "log2_bins": self.lifetime.log2_bins()},
            "idle_before_evict_steps": {**self.idle.summary(),
                                        "log2_bins": self.idle.log2_bins()},
            "evicted_while_referenced": self.evicted_in_use,
            "age_at_evict_steps": self.age_at_evict.summary(),
            "age_at_hit_steps": age_at_hit.summary(),
            "evicted_younger_than_median_hit_age": younger,
            "regret": {"evictions": self.regret_evictions,
                       "fraction": self.regret_evictions / self.evictions if self.evictions
                       else None,
                       "recomputed_tokens": self.regret_tokens,
                       "gap_steps": self.regret_gap.summary()},
            "top_evictors": [{"req": name(r), "blocks": n} for r, n in self.by_req.most_common(top)],
            "timeline": {"bucket_steps": series["bucket_steps"],
                         "evictions": series["evictions"]},
        }
