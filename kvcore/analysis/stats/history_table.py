"""`TableHistory`: `EvictedHashes` with its large part in a `U64Table` (a numpy hash table) in
place of sorted arrays, and whole batches put straight into the table; `TableBlockKeys`, the
same store for the partial-block keys. The segment reader (`segments.py`) uses them.

The same mapping, the same answers: only where entries live differs. What it skips: the sorted
arrays' merges (every `LIMIT` entries, a pass over all of them to insert, index and filter:
~10% of a stats run on the conversation trace's 1 GB stream, which holds ~5.8 million evicted
hashes and as many block keys at the end) and, for batches, the dict (a batch goes into the
table in a few vectorized probe rounds). The dict in front stays for the one-event-at-a-time
handlers (the reference the segment reader falls back on), and is moved into the table before a
batch goes there, so a key is never in both with different values. Keys that are no uint64
(hand-built streams) keep the dict's path, as in `EvictedHashes`.
"""

from __future__ import annotations

from itertools import repeat

import numpy as np

from kvcore.analysis.stats.history import EvictedHashes, u64
from kvcore.analysis.stats.sorted_arrays import DEAD
from kvcore.analysis.stats.u64_table import U64Table


class TableHistory(EvictedHashes):
    def __init__(self, limit: int | None = None) -> None:
        super().__init__(limit)
        self.old = U64Table()     # type: ignore[assignment]

    def merge(self) -> None:
        if not self.recent:
            return
        keys = np.fromiter(self.recent.keys(), dtype=np.uint64, count=len(self.recent))
        vals = np.fromiter(self.recent.values(), dtype=np.int64, count=len(self.recent))
        self.old.put(keys, vals)
        self.recent = {}
        self._seen.fill(0)
        self._all = False

    def put_array(self, q: np.ndarray, vals: np.ndarray) -> None:
        """Put distinct uint64 keys with their values, straight into the table."""
        if self._all:
            self.put_many(q.tolist(), vals.tolist())
            return
        if self.recent:
            self.merge()
        self.old.put(q, vals)

    def put_many(self, hashes: list, values, q: np.ndarray | None = None) -> None:
        if q is None:
            q = u64(hashes)
        if q is None or self._all:
            super().put_many(hashes, values, q)
            return
        vals = np.fromiter(values, dtype=np.int64, count=len(hashes))
        if len(q) > 1:            # a key twice keeps its last value, as the dict's update
            u, last = np.unique(q[::-1], return_index=True)
            if len(u) < len(q):
                q, vals = u, vals[::-1][last]
        self.put_array(q, vals)

    def get_array(self, hashes: list[int], q: np.ndarray | None = None) -> np.ndarray:
        if q is None:
            q = u64(hashes)
        if q is None or self._all:
            out = np.fromiter(map(self.recent.get, hashes, repeat(DEAD)), dtype=np.int64,
                              count=len(hashes))
            if len(self.old):
                rest = np.flatnonzero(out == DEAD)
                out[rest] = self.old.get(np.array([hashes[i] for i in rest.tolist()],
                                                  dtype=np.uint64))
            return out
        if not self.recent:
            return self.old.get(q)
        out = np.full(len(q), DEAD, dtype=np.int64)
        cand = self._in_recent(q)
        if len(cand):
            out[cand] = np.fromiter(map(self.recent.get, [hashes[i] for i in cand.tolist()],
                                        repeat(DEAD)), dtype=np.int64, count=len(cand))
        if len(self.old):
            rest = np.flatnonzero(out == DEAD)
            out[rest] = self.old.get(q[rest])
        return out

    def pop_many(self, hashes: list[int]) -> list[int]:
        if not self.recent:
            rest = hashes
            found: list[int] = []
        else:
            got = list(map(self.recent.pop, hashes, repeat(None)))
            found = [v for v in got if v is not None]
            rest = [h for h, v in zip(hashes, got) if v is None]
        if rest and len(self.old):
            vals = self.old.take(np.unique(np.array(rest, dtype=np.uint64)))
            found.extend(vals[vals >= 0].tolist())
        return found

    def get_q(self, q: np.ndarray) -> np.ndarray:
        """`get_array` of uint64 keys (the dict moved into the table first)."""
        if self.recent:
            self.merge()
        return self.old.get(q)

    def take_q(self, q: np.ndarray) -> np.ndarray:
        """The values of distinct uint64 keys (-1 where absent), those found removed."""
        if self.recent:
            self.merge()
        return self.old.take(q)

    def pop_one(self, h: int) -> int | None:
        if self._all or type(h) is not int or self._seen_mv[h & self._mask]:
            v = self.recent.pop(h, None)
            if v is not None:
                return v
        if not len(self.old) or type(h) is not int or not 0 <= h < 1 << 64:
            return None if not len(self.old) else self._pop_odd(h)
        v = self.old.take_one(h)
        return v if v >= 0 else None

    def _pop_odd(self, h) -> int | None:
        vals = self.old.take(np.array([h], dtype=np.uint64))    # raises as the reference did
        return int(vals[0]) if vals[0] >= 0 else None


class TableBlockKeys(TableHistory):
    """`blockkeys.BlockKeys` in a `TableHistory`."""
