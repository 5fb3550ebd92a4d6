"""Memory usage: blocks held by requests, cached but evictable, and free, over steps and time.

Samples are taken at the end of every engine step (the state after the step's last event),
weighted by the number of steps it lasts (idle steps without events keep the state).
`peak_used` is the maximum after *every* event, as the replay's `peak_usage` is measured.
Usage fractions are of the usable pool, `num_blocks - 1` (the null block is never usable),
as vLLM's `BlockPool.get_usage`.
"""

from __future__ import annotations

from collections import Counter

from kvcore.analysis.stats.dist import Dist, percentiles_of_counts


class MemoryStats:
    def __init__(self, usable: int, block_size: int) -> None:
        self.usable = usable
        self.block_size = block_size
        self.used_at_step: Counter[int] = Counter()      # blocks in use at a step's end -> steps
        self.cached_at_step: Counter[int] = Counter()    # cached, unreferenced (evictable) blocks
        self.free_at_step: Counter[int] = Counter()      # free blocks holding no hash
        self.time_used = 0.0               # sum of used * ms
        self.time_cached = 0.0
        self.time_ms = 0.0
        self.peak_used = 0
        self.peak_step: int | None = None
        self.kv_tokens = Dist()            # per request at its end: tokens whose KV it held
        self.slots = Dist()                # per request at its end: slots of the blocks it held
        self.empty_slots = Dist()          # slots allocated but empty (last-block fragmentation)

    def sample(self, used: int, cached: int, weight: int, dt_ms: float) -> None:
        self.used_at_step[used] += weight
        self.cached_at_step[cached] += weight
        self.free_at_step[self.usable - used - cached] += weight
        if dt_ms > 0:
            self.time_used += used * dt_ms
            self.time_cached += cached * dt_ms
            self.time_ms += dt_ms

    def request_end(self, blocks: int, kv_tokens: int) -> None:
        """``blocks`` held at the end (null entries left out), ``kv_tokens`` the request's."""
        slots = blocks * self.block_size
        kv = max(kv_tokens, 0)
        if kv > slots:
            # fewer blocks than the tokens need: a sliding window's table, whose nulls are the
            # blocks that left the window: the blocks held are the last ones, full but the
            # last (10 blocks of 16 held at 173 tokens hold 157, not 160)
            kv = max(0, slots - (-kv) % self.block_size)
        self.kv_tokens.add(kv)
        self.slots.add(slots)
        self.empty_slots.add(slots - kv)

    def _blocks(self, counts: Counter, time_sum: float | None) -> dict:
        d = Dist()
        d.counts = counts
        s = d.summary()
        return {"peak": s["max"], "mean_steps": s["mean"],
                "mean_time": (time_sum / self.time_ms) if (time_sum is not None and self.time_ms)
                else None,
                **percentiles_of_counts(counts)}

    def to_json(self, series: dict) -> dict:
        used = self._blocks(self.used_at_step, self.time_used)
        cached = self._blocks(self.cached_at_step, self.time_cached)
        free = self._blocks(self.free_at_step, None)
        if used["mean_time"] is not None:
            free["mean_time"] = self.usable - used["mean_time"] - cached["mean_time"]
        return {
            "usable_blocks": self.usable,
            "peak_used_blocks": self.peak_used,
            "peak_usage": self.peak_used / self.usable if self.usable else 0.0,
            "peak_step": self.peak_step,
            "used_blocks": used,
            "cached_blocks": cached,
            "free_blocks": free,
            "steps_sampled": sum(self.used_at_step.values()),
            "kv_tokens_per_request": self.kv_tokens.summary(),
            "slots_per_request": self.slots.summary(),
            "empty_slots_per_request": self.empty_slots.summary(),
            "empty_slots_fraction": _ratio(
                sum(k * c for k, c in self.empty_slots.counts.items()),
                sum(k * c for k, c in self.slots.counts.items())),
            "timeline": {"bucket_steps": series["bucket_steps"], "used_max": series["used_max"],
                         "used_mean": series["used_mean"], "cached_mean": series["cached_mean"]},
        }


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None
