"""Prefix reuse: hit rate weighted by tokens and by requests, over windows of requests and of
simulated time, per request, the most reused blocks, reuse gaps and reuse distances.

Only *counted* admissions (`admit.counted`: a first admission past the warm-up) enter the hit
rates, exactly the admissions the replay's `hit_rate` sums over.
* reuse gap: steps between two uses of a cached block (its `cache`, then each `touch`);
* reuse distance: counted admissions between two uses of a cached block;
* age at hit: steps from the block's `cache` to the `touch`.
"""

from __future__ import annotations

from array import array
from collections import Counter

from kvcore.analysis.stats.bulk import BulkDist
from kvcore.analysis.stats.dist import percentiles_of_counts


class ReuseStats:
    def __init__(self, window_requests: int, window_ms: float, groups: int = 1) -> None:
        self.window_requests = window_requests
        self.window_ms = window_ms
        self.requests = 0
        self.prompt_tokens = 0
        self.hit_tokens = 0
        self.requests_with_hit = 0
        self.fractions = array("d")          # per counted request, hit / prompt
        self.req_windows: list[list[int]] = []
        self._cur = [0, 0, 0]                # prompt, hit, requests of the open request window
        self.time_windows: dict[int, list[int]] = {}
        self.hits: list[Counter] = [Counter() for _ in range(groups)]  # per group: hash -> touches
        self.depth: list[dict] = [{} for _ in range(groups)]  # hash -> position in the prompt
        self.touched_blocks = 0
        self.reuse_gap = BulkDist()           # one value per touched block: counted in bulk
        self.reuse_distance = BulkDist()
        self.age_at_hit = BulkDist()

    def hit_hashes(self, g: int, hashes: list) -> None:
        """A touch event's hashes: one more hit each, and the deepest prompt position seen."""
        self.hits[g].update(hashes)               # block order: ties of most_common keep it
        depth = self.depth[g]
        for i, h in enumerate(hashes):
            if i > depth.get(h, -1):
                depth[h] = i

    def admit(self, prompt: int, hit: int, t_ms: float) -> None:
        self.requests += 1
        self.prompt_tokens += prompt
        self.hit_tokens += hit
        if hit:
            self.requests_with_hit += 1
        self.fractions.append(hit / prompt if prompt else 0.0)
        cur = self._cur
        cur[0] += prompt
        cur[1] += hit
        cur[2] += 1
        if cur[2] == self.window_requests:
            self.req_windows.append(cur)
            self._cur = [0, 0, 0]
        w = self.time_windows.get(int(t_ms // self.window_ms))
        if w is None:
            w = self.time_windows[int(t_ms // self.window_ms)] = [0, 0, 0]
        w[0] += prompt
        w[1] += hit
        w[2] += 1

    def _prefixes(self, top: int, block_sizes: list[int]) -> list[dict]:
        """The most shared prefixes: a chain's blocks all have the hits of its least used block,
        so for each hit count keep only the deepest block (the longest prefix with that many
        hits). Every block whose hit count can make the first `top` rows is read (drawing from
        the 50 x `top` most hit blocks missed the deepest block of a count: a 3,824-token
        prefix two admissions adopted was reported as 1,888 tokens, and `--top` changed it)."""
        best: dict[tuple[int, int], tuple[int, int]] = {}      # (group, hits) -> (depth, hash)
        pairs = sorted(((k, g) for g, c in enumerate(self.hits) for k in set(c.values())),
                       reverse=True)
        if not pairs or top <= 0:
            return []
        least = pairs[min(top, len(pairs)) - 1][0]      # rows come from counts >= this one
        for g, c in enumerate(self.hits):
            depth = self.depth[g]
            for h, k in c.items():
                if k < least:
                    continue
                d = depth.get(h, 0)
                if d >= best.get((g, k), (-1, 0))[0]:
                    best[(g, k)] = (d, h)
        out = [{"group": g, "hits": k, "prefix_tokens": (d + 1) * block_sizes[g], "hash": h}
               for (g, k), (d, h) in best.items()]
        out.sort(key=lambda p: (-p["hits"], -p["prefix_tokens"]))
        return out[:top]

    def to_json(self, top: int, block_sizes: list[int], series: dict) -> dict:
        n = self.requests
        fr = Counter(self.fractions)
        wins = self.req_windows + ([self._cur] if self._cur[2] else [])
        tops = []
        for g, c in enumerate(self.hits):
            for h, k in c.most_common(top):
                tops.append({"group": g, "hash": h, "hits": k, "block_index": self.depth[g].get(h),
                             "prefix_tokens": (self.depth[g].get(h, 0) + 1) * block_sizes[g]})
        tops.sort(key=lambda d: (-d["hits"], d["group"], d["block_index"] or 0))
        prefixes = self._prefixes(top, block_sizes)
        return {
            "requests": n,
            "prompt_tokens": self.prompt_tokens,
            "hit_tokens": self.hit_tokens,
            "hit_rate": self.hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0,
            "request_hit_rate_mean": sum(self.fractions) / n if n else 0.0,
            "requests_with_hit": self.requests_with_hit,
            "request_hit_rate": {"count": n, **percentiles_of_counts(fr),
                                 "max": max(fr) if fr else None},
            "windows_by_requests": {"size": self.window_requests, "windows": [
                {"requests": w[2], "prompt_tokens": w[0], "hit_tokens": w[1],
                 "hit_rate": w[1] / w[0] if w[0] else 0.0} for w in wins]},
            "windows_by_time": {"size_ms": self.window_ms, "windows": [
                {"start_ms": k * self.window_ms, "requests": w[2], "prompt_tokens": w[0],
                 "hit_tokens": w[1], "hit_rate": w[1] / w[0] if w[0] else 0.0}
                for k, w in sorted(self.time_windows.items())]},
            "touched_blocks": self.touched_blocks,
            "distinct_blocks_hit": sum(len(c) for c in self.hits),
            "top_blocks": tops[:top],
            "top_prefixes": prefixes,
            "reuse_gap_steps": {**self.reuse_gap.summary(),
                                "log2_bins": self.reuse_gap.log2_bins()},
            "reuse_distance_requests": self.reuse_distance.summary(),
            "timeline": {"bucket_steps": series["bucket_steps"],
                         "prompt_tokens": series["prompt_tokens"],
                         "hit_tokens": series["hit_tokens"]},
        }
