"""`EvictedHashes`: every hash evicted and not cached again since, with who evicted it and when.

Miss attribution (cold or evicted?) and regret (is this hash coming back?) need it for every
hash ever evicted, which on a long replay is millions. A dict costs ~110 bytes an entry, so
recent entries live in a dict of at most `LIMIT` entries and are then merged into sorted numpy
arrays (`SortedArrays`, 16 bytes an entry). Values are ``(step << 32) | evictor`` and never
negative.

Lookups and pops take a whole event's (or admission's) hashes. In front of the dict is a byte
filter (`_seen`: byte ``h & mask`` set for every key put in the dict since the last merge):
most hashes looked up are in neither part (cold blocks), and a dict lookup of a big int in a
dict of a million is a few cache misses, the filter one byte of a numpy array read for the
whole batch at once (measured: the dict lookups were 15% of a stats run). The filter is off
(`_all`) once a key that is no uint64 was put in (hand-built streams).
"""

from __future__ import annotations

from itertools import repeat

import numpy as np

from kvcore.analysis.stats.sorted_arrays import DEAD, M64, SortedArrays


def u64(values) -> np.ndarray | None:
    """Python ints as uint64, or None when one is not an int in 0..2^64-1."""
    try:
        return np.array(values, dtype=np.uint64)
    except (OverflowError, TypeError, ValueError):
        return None


class EvictedHashes:
    LIMIT = 1 << 20

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit or self.LIMIT
        self.recent: dict[int, int] = {}
        self.old = SortedArrays()
        size = 1 << max(10, (16 * self.limit - 1).bit_length())   # 16 bytes a dict entry
        self._seen = np.zeros(min(size, 1 << 24), dtype=np.uint8)
        self._mask = len(self._seen) - 1
        self._mask64 = np.uint64(self._mask)
        self._seen_mv = self._seen.data
        self._all = False

    def __len__(self) -> int:
        return len(self.recent) + len(self.old)

    # -- puts -------------------------------------------------------------------------------
    def __setitem__(self, h: int, value: int) -> None:
        self.put_one(h, value)
        if len(self.recent) >= self.limit:
            self.merge()

    def put_one(self, h: int, value: int) -> None:
        """``self[h] = value`` without the merge (the caller checks `full`)."""
        self.recent[h] = value
        if type(h) is int:
            self._seen_mv[h & self._mask] = 1
        else:
            self._all = True

    def put_many(self, hashes: list, values, q: np.ndarray | None = None) -> None:
        """Put each hash with its value (``values``: an iterable, e.g. `repeat(v)`); ``q``:
        the hashes as uint64 when the caller has them. No merge (the caller checks `full`)."""
        self.recent.update(zip(hashes, values))
        if q is None:
            q = u64(hashes)
        if q is None:
            for h in hashes:
                if type(h) is int:
                    self._seen_mv[h & self._mask] = 1
                else:
                    self._all = True
        else:
            self._seen[q & self._mask64] = 1

    def full(self) -> bool:
        return len(self.recent) >= self.limit

    def merge(self) -> None:
        keys = np.fromiter(self.recent.keys(), dtype=np.uint64, count=len(self.recent))
        vals = np.fromiter(self.recent.values(), dtype=np.int64, count=len(self.recent))
        self.old.merge(keys, vals)
        self.recent = {}
        self._seen.fill(0)
        self._all = False

    # -- lookups ----------------------------------------------------------------------------
    def _in_recent(self, q: np.ndarray) -> np.ndarray:
        """Positions of the hashes that may be in the dict."""
        return np.flatnonzero(self._seen[q & self._mask64])

    def get_many(self, hashes: list[int]) -> list[int | None]:
        """The value of each hash (None when it is not here)."""
        return [None if v == DEAD else v for v in self.get_array(hashes).tolist()]

    def get_array(self, hashes: list[int], q: np.ndarray | None = None) -> np.ndarray:
        """The value of each hash as an int64 array, -1 where a hash is not here; ``q``: the
        hashes as uint64 when the caller has them."""
        if q is None:
            q = u64(hashes)
        if q is None or self._all:
            out = np.fromiter(map(self.recent.get, hashes, repeat(DEAD)), dtype=np.int64,
                              count=len(hashes))
            if len(self.old):
                rest = np.flatnonzero(out == DEAD)
                pos, idx = self.old.find(np.array([hashes[i] for i in rest.tolist()],
                                                  dtype=np.uint64))
                out[rest[pos]] = self.old.vals[idx]
            return out
        out = np.full(len(q), DEAD, dtype=np.int64)
        cand = self._in_recent(q)
        if len(cand):
            out[cand] = np.fromiter(map(self.recent.get, [hashes[i] for i in cand.tolist()],
                                        repeat(DEAD)), dtype=np.int64, count=len(cand))
        if len(self.old):
            rest = np.flatnonzero(out == DEAD) if len(cand) else np.arange(len(q))
            pos, idx = self.old.find(q[rest])
            out[rest[pos]] = self.old.vals[idx]
        return out

    def pop_many(self, hashes: list[int]) -> list[int]:
        """Remove the hashes that are here; return their values (in no particular order)."""
        q = u64(hashes)
        if q is None or self._all:
            got = list(map(self.recent.pop, hashes, repeat(None)))
            found = [v for v in got if v is not None]
            rest = [h for h, v in zip(hashes, got) if v is None]
            if rest and len(self.old):
                _, idx = self.old.find(np.array(rest, dtype=np.uint64))
                found.extend(self.old.kill(np.unique(idx)))
            return found
        cand = self._in_recent(q)
        found = []
        keep = np.ones(len(q), dtype=bool)
        if len(cand):
            ids = cand.tolist()
            got = list(map(self.recent.pop, [hashes[i] for i in ids], repeat(None)))
            for i, v in zip(ids, got):
                if v is not None:
                    found.append(v)
                    keep[i] = False
        if len(self.old):
            _, idx = self.old.find(q[keep])
            if len(idx):
                found.extend(self.old.kill(np.unique(idx)))
        return found

    def pop_one(self, h: int) -> int | None:
        """`pop_many([h])` for one hash (most cache events name one block), no arrays built
        for the usual answers (in the dict, or ruled out by both filters)."""
        if self._all or type(h) is not int or self._seen_mv[h & self._mask]:
            v = self.recent.pop(h, None)
            if v is not None:
                return v
        old = self.old
        if not len(old) or not old.maybe(h):
            return None
        _, idx = old.find(np.array([h], dtype=np.uint64))
        return old.kill(idx)[0] if len(idx) else None


__all__ = ["M64", "EvictedHashes", "u64"]
