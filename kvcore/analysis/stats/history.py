"""`EvictedHashes`: every hash evicted and not cached again since, with who evicted it and when.

Miss attribution (cold or evicted?) and regret (is this hash coming back?) need it for every
hash ever evicted, which on a long replay is millions. A dict costs ~110 bytes an entry, so
recent entries live in a dict of at most `LIMIT` entries and are then merged into two sorted
numpy arrays (8-byte hash, 8-byte value; 16 bytes an entry). Lookups go to the dict first, then
one vectorized binary search per event for the rest (`get_array`: the same as an array, for
the vectorized miss attribution). Values are ``(step << 32) | evictor`` and
never negative; a popped array entry is marked -1 and dropped at the next merge.
"""

from __future__ import annotations

from itertools import repeat

import numpy as np

_DEAD = -1
_M64 = (1 << 64) - 1
_SHIFT = np.uint64(3)     # filter bit -> byte
_LOW = np.uint64(7)       # filter bit within its byte


class EvictedHashes:
    LIMIT = 1 << 18

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit or self.LIMIT
        self.recent: dict[int, int] = {}
        self.keys = np.empty(0, dtype=np.uint64)
        self.vals = np.empty(0, dtype=np.int64)
        self.dead = 0
        self.mask = np.uint64(0)                  # filter size - 1 (bits)
        self.bits = np.zeros(1, dtype=np.uint8)
        self._mask_int = 0                        # the same two for `_maybe` (Python ints)
        self._bits_mv = memoryview(self.bits)

    def __len__(self) -> int:
        return len(self.recent) + len(self.keys) - self.dead

    def __setitem__(self, h: int, value: int) -> None:
        self.recent[h] = value
        if len(self.recent) >= self.limit:
            self.merge()

    def _find(self, hashes: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Indices into the arrays of the live entries among ``hashes``: (positions in hashes,
        array indices). A bit filter over the arrays' keys (`_bits`) drops most absent hashes
        first: a binary search in millions of keys is ~23 cache misses, the filter one."""
        if not len(self.keys) or not hashes:
            return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp)
        q = np.array(hashes, dtype=np.uint64)
        b = q & self.mask
        maybe = np.nonzero((self.bits[b >> _SHIFT] >> (b & _LOW)) & 1)[0]
        if not len(maybe):
            return maybe, maybe
        q = q[maybe]
        idx = np.searchsorted(self.keys, q)
        idx[idx == len(self.keys)] = 0
        hit = (self.keys[idx] == q) & (self.vals[idx] != _DEAD)
        pos = np.nonzero(hit)[0]
        return maybe[pos], idx[pos]

    def get_many(self, hashes: list[int]) -> list[int | None]:
        """The value of each hash (None when it is not here)."""
        out = list(map(self.recent.get, hashes))   # C-level: ~3x the list comprehension
        if len(self.keys):
            rest = [i for i, v in enumerate(out) if v is None]
            pos, idx = self._find([hashes[i] for i in rest])
            for p, v in zip(pos.tolist(), self.vals[idx].tolist()):
                out[rest[p]] = v
        return out

    def get_array(self, hashes: list[int]) -> np.ndarray:
        """`get_many` as an int64 array, -1 where a hash is not here (values are never negative)."""
        out = np.fromiter(map(self.recent.get, hashes, repeat(_DEAD)), dtype=np.int64,
                          count=len(hashes))
        if len(self.keys):
            rest = np.flatnonzero(out == _DEAD)
            if len(rest):
                pos, idx = self._find([hashes[i] for i in rest.tolist()])
                out[rest[pos]] = self.vals[idx]
        return out

    def pop_many(self, hashes: list[int]) -> list[int]:
        """Remove the hashes that are here; return their values (in no particular order)."""
        got = list(map(self.recent.pop, hashes, repeat(None)))   # one C-level pass
        n_miss = got.count(None)
        found = [v for v in got if v is not None] if n_miss < len(got) else []
        if not n_miss or not len(self.keys):
            return found
        rest = hashes if not found else [h for h, v in zip(hashes, got) if v is None]
        _, idx = self._find(rest)
        if len(idx):
            idx = np.unique(idx)
            found.extend(self.vals[idx].tolist())
            self.vals[idx] = _DEAD
            self.dead += len(idx)
        return found

    def pop_one(self, h: int) -> int | None:
        """`pop_many([h])` for one hash (most cache events name one block): the bit filter is
        read in Python, no arrays are built for the usual answer (not here)."""
        v = self.recent.pop(h, None)
        if v is not None or not len(self.keys) or not self._maybe(h):
            return v
        _, idx = self._find([h])
        if not len(idx):
            return None
        i = int(idx[0])
        v = int(self.vals[i])
        self.vals[i] = _DEAD
        self.dead += 1
        return v

    def _maybe(self, h: int) -> bool:
        """The bit filter for one hash: False when it is surely not in the arrays."""
        if type(h) is not int or not 0 <= h <= _M64:
            return True                           # `_find` raises, as it did
        b = h & self._mask_int
        return bool((self._bits_mv[b >> 3] >> (b & 7)) & 1)

    def merge(self) -> None:
        # Sort only the new entries, then insert them at their places: one new pair of arrays,
        # no argsort over everything (peak memory about twice the arrays, not four times).
        keys = np.fromiter(self.recent.keys(), dtype=np.uint64, count=len(self.recent))
        vals = np.fromiter(self.recent.values(), dtype=np.int64, count=len(self.recent))
        order = np.argsort(keys)
        keys, vals = keys[order], vals[order]
        old_k, old_v = self.keys, self.vals
        if self.dead:
            keep = old_v != _DEAD
            old_k, old_v = old_k[keep], old_v[keep]
        at = np.searchsorted(old_k, keys)
        self.keys = np.insert(old_k, at, keys)
        self.vals = np.insert(old_v, at, vals)
        self.recent = {}
        self.dead = 0
        # The filter: one bit per (low bits of a) key, at least 16 bits a key up to 2^28 bits
        # (32 MB); rebuilt from every key when the arrays outgrow it, else the new keys OR-ed
        # in. Popped keys keep their bits (a few more false positives, never a wrong answer).
        want = 1 << max(16, (16 * len(self.keys) - 1).bit_length())
        want = min(want, 1 << 28)
        if want > (self.mask + 1):
            self.mask = np.uint64(want - 1)
            self.bits = np.zeros(want >> 3, dtype=np.uint8)
            keys = self.keys
        b = keys & self.mask
        np.bitwise_or.at(self.bits, b >> _SHIFT, (1 << (b & _LOW)).astype(np.uint8))
        self._mask_int = int(self.mask)
        self._bits_mv = memoryview(self.bits)
