"""`BulkDist`: a `Dist` of non-negative integers (step or admission differences) fed a whole
event's values at once and counted with `np.bincount` in batches.

The block handlers add one value per block (a block's lifetime, idle time, age ...), several
million of them on a long replay. Counting each in a `Counter` (``c[v] += 1``) measured ~1 µs a
value; here an event adds one numpy array (or one Python int for a single-block event) to a
list, and every `FLUSH` values the list is concatenated and bincounted into a growing array of
counts (~20 ns a value, same measurement). Memory: the pending values (at most about `FLUSH` +
one event) and one count per distinct value up to the largest (steps: a few MB). Negative
values (a hand-built stream whose steps go back) go to a plain Counter instead. `counts` gives
the same Counter of Python ints a `Dist` holds, so everything that reads a `Dist` reads this
one unchanged.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from kvcore.analysis.stats.dist import Dist


class BulkDist(Dist):
    __slots__ = ("_bins", "_counts", "_ints", "_other", "_parts", "_pending")

    FLUSH = 1 << 18

    def __init__(self) -> None:     # no super().__init__(): `counts` is a property here
        self._bins = np.zeros(0, dtype=np.int64)   # value -> count, values 0..len-1
        self._parts: list[np.ndarray] = []         # pending arrays of values
        self._ints: list[int] = []                 # pending single values
        self._pending = 0                          # values in _parts
        self._other: Counter = Counter()           # negative values
        self._counts: Counter | None = None        # `counts`, until the next add

    def add(self, value, n: int = 1) -> None:
        if n == 1:
            self._ints.append(value)
        else:
            self._parts.append(np.full(n, value, dtype=np.int64))
            self._pending += n
        self._counts = None
        if len(self._ints) >= self.FLUSH:
            self.flush()

    def add_array(self, values: np.ndarray) -> None:
        """One value per element (an int64 array, not kept: the caller may not reuse it)."""
        self._parts.append(values)
        self._pending += len(values)
        self._counts = None
        if self._pending >= self.FLUSH:
            self.flush()

    def flush(self) -> None:
        """Count the pending values into the bins."""
        parts = self._parts
        if self._ints:
            parts.append(np.array(self._ints, dtype=np.int64))
            self._ints = []
        if not parts:
            return
        vals = np.concatenate(parts) if len(parts) > 1 else parts[0]
        self._parts = []
        self._pending = 0
        if len(vals) and vals.min() < 0:
            neg = vals < 0
            self._other.update(vals[neg].tolist())
            vals = vals[~neg]
        if not len(vals):
            return
        counts = np.bincount(vals)
        bins = self._bins
        if len(counts) > len(bins):
            counts[:len(bins)] += bins
            self._bins = counts
        else:
            bins[:len(counts)] += counts

    @property
    def counts(self) -> Counter:        # type: ignore[override]
        """value -> count (Python ints), as `Dist.counts`."""
        if self._counts is None:
            self.flush()
            nz = np.flatnonzero(self._bins)
            c = Counter(dict(zip(nz.tolist(), self._bins[nz].tolist(), strict=True)))
            c.update(self._other)
            self._counts = c
        return self._counts
