"""Preemption by recompute: how often, how many computed tokens were thrown away, who suffered,
and how much of it the prefix cache gave back at re-admission."""

from __future__ import annotations

from collections import Counter

from kvcore.analysis.stats.dist import Dist


class PreemptionStats:
    def __init__(self) -> None:
        self.preemptions = 0
        self.recomputed_tokens = 0
        self.victims: Counter = Counter()      # request -> times preempted
        self.resumed = 0
        self.resumed_hit_tokens = 0
        self.resumed_prompt_tokens = 0

    def to_json(self, top: int) -> dict:
        per = Dist()
        for n in self.victims.values():
            per.add(n)
        return {
            "preemptions": self.preemptions,
            "recomputed_tokens": self.recomputed_tokens,
            "victims": len(self.victims),
            "preemptions_per_victim": per.summary(),
            "top_victims": [{"req": r, "preemptions": n} for r, n in self.victims.most_common(top)],
            "resumed_admissions": self.resumed,
            "resumed_prompt_tokens": self.resumed_prompt_tokens,
            "resumed_hit_tokens": self.resumed_hit_tokens,
        }
