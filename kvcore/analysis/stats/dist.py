"""Exact distributions and bounded time series for `kvcli stats`.

Percentiles use the **nearest-rank** definition: for N samples sorted ascending, the p-th
percentile is the sample at 1-based rank ``ceil(p * N / 100)`` (p50 of [1, 2, 3, 4] is 2, p90 is 4).
It is always one of the samples, so integer steps give integer percentiles.

`Dist` keeps an exact histogram (value -> count) instead of the samples, so memory grows with the
number of distinct values (steps, block counts), never with the number of events.
`Series` keeps a fixed number of buckets over the step axis and doubles the bucket width when a
step falls past the end, so a run of any length fits in the same memory.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

PERCENTILES = (50, 90, 99)


def nearest_rank(p: int, n: int) -> int:
    """1-based rank of the p-th percentile among n samples: ceil(p * n / 100), at least 1."""
    return max(1, -(-p * n // 100))


def percentiles_of_counts(counts: dict, ps: Iterable[int] = PERCENTILES) -> dict[str, object]:
    """Nearest-rank percentiles of a histogram {value: count} (values must be orderable)."""
    n = sum(counts.values())
    if n == 0:
        return {f"p{p}": None for p in ps}
    keys = sorted(counts)
    out: dict[str, object] = {}
    wanted = sorted((nearest_rank(p, n), p) for p in ps)
    cum, i = 0, 0
    for k in keys:
        cum += counts[k]
        while i < len(wanted) and cum >= wanted[i][0]:
            out[f"p{wanted[i][1]}"] = k
            i += 1
    return {f"p{p}": out[f"p{p}"] for p in ps}


class Dist:
    """An exact distribution of numbers: count, mean, nearest-rank p50/p90/p99, min and max."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: Counter = Counter()

    def add(self, value, n: int = 1) -> None:
        self.counts[value] += n

    def __len__(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> dict[str, object]:
        n = sum(self.counts.values())
        if n == 0:
            return {"count": 0, "mean": None, "min": None, **percentiles_of_counts({}), "max": None}
        total = sum(k * c for k, c in self.counts.items())
        return {"count": n, "mean": total / n, "min": min(self.counts),
                **percentiles_of_counts(self.counts), "max": max(self.counts)}

    def log2_bins(self) -> list[list[int]]:
        """[[lo, hi, count], ...]: bins [0, 1), [1, 2), [2, 4), [4, 8), ... (non-negative ints)."""
        bins: dict[int, int] = {}
        for v, c in self.counts.items():
            k = int(v).bit_length()          # 0 -> 0, 1 -> 1, 2..3 -> 2, 4..7 -> 3
            bins[k] = bins.get(k, 0) + c
        return [[0 if k == 0 else 1 << (k - 1), 1 << k if k else 1, bins[k]]
                for k in sorted(bins)]


class Series:
    """Per-bucket aggregates over steps 0.., in at most ``n`` buckets of ``width`` steps each.

    ``channels`` maps a name to "sum" or "max"; buckets merge pairwise (width doubles) when a
    step falls past the last bucket.
    """

    def __init__(self, channels: dict[str, str], n: int = 256) -> None:
        self.n = n
        self.width = 1
        self.kinds = dict(channels)
        self.data = {name: [0] * n for name in channels}
        self.last_step = -1

    def _grow(self, step: int) -> None:
        while step >= self.n * self.width:
            for name, col in self.data.items():
                merge = max if self.kinds[name] == "max" else (lambda a, b: a + b)
                half = [merge(col[2 * i], col[2 * i + 1]) for i in range(self.n // 2)]
                self.data[name] = half + [0] * (self.n - self.n // 2)
            self.width *= 2

    def add(self, name: str, step: int, value) -> None:
        if step >= self.n * self.width:
            self._grow(step)
        self.last_step = max(self.last_step, step)
        col = self.data[name]
        i = step // self.width
        if self.kinds[name] == "max":
            col[i] = max(col[i], value)
        else:
            col[i] += value

    def add_max_range(self, name: str, start: int, end: int, value) -> None:
        """Raise a "max" channel to ``value`` over steps start..end-1 (an idle stretch)."""
        if end <= start:
            return
        self.add(name, end - 1, value)
        col = self.data[name]
        for i in range(start // self.width, (end - 1) // self.width + 1):
            col[i] = max(col[i], value)

    def add_sum_range(self, name: str, start: int, end: int, value) -> None:
        """Add ``value`` once per step for steps start..end-1 to a "sum" channel."""
        if end <= start:
            return
        self.add(name, end - 1, 0)            # grow to fit first
        w = self.width
        col = self.data[name]
        i = start
        while i < end:
            b = i // w
            stop = min(end, (b + 1) * w)
            col[b] += value * (stop - i)
            i = stop

    def bucket_mean(self, name: str) -> list[float]:
        """A "sum" channel filled once per step, divided by the steps of each bucket."""
        k = self.buckets()
        w = self.width
        return [self.data[name][i] / (min(w, self.last_step + 1 - i * w) or 1) for i in range(k)]

    def buckets(self) -> int:
        return self.last_step // self.width + 1 if self.last_step >= 0 else 0

    def to_json(self) -> dict[str, object]:
        k = self.buckets()
        return {"bucket_steps": self.width, "buckets": k,
                **{name: col[:k] for name, col in self.data.items()}}
