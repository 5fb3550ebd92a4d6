"""`U64Table`: uint64 keys -> non-negative int64 values in a numpy open-addressing hash table
(linear probing), every operation on a whole array of keys at once.

It replaces sorted arrays as the large part of `EvictedHashes` (the evicted-hash history and
the partial-block keys: millions of entries on a long replay). Sorted arrays paid for every
merge with a pass over everything (an insert, a bucket index and a filter rebuilt); here a put
touches only its own slots (a few vectorized probe rounds), and a lookup is one or two gathers
(most keys are found or ruled out at their first slot). Removed entries keep their key with the
value -1 (a tombstone: probing goes past it) until the table grows and drops them.

Slot of a key: its top bits after a multiplication by an odd constant (Fibonacci hashing), so
hand-built keys 1, 2, 3 spread as well as hashes do. Key 0 marks an empty slot; the key 0
itself is kept aside (``_zero``).
"""

from __future__ import annotations

import numpy as np

_MUL_INT = 0x9E3779B97F4A7C15
_MUL = np.uint64(_MUL_INT)
_M64 = (1 << 64) - 1
_LOAD = 0.6             # grow (x2) past this share of slots used (tombstones included)
_EMPTY_I = np.empty(0, dtype=np.intp)
# probe rounds are done on whole arrays while more than this many keys are still probing;
# the last few go one by one (a round costs a few numpy calls whatever its size)
_SCALAR_TAIL = 24


class U64Table:
    def __init__(self, bits: int = 12) -> None:
        self._alloc(bits)
        self.live = 0            # entries with a value
        self._zero = -1          # the value of key 0

    def _alloc(self, bits: int) -> None:
        self.bits = bits
        self.keys = np.zeros(1 << bits, dtype=np.uint64)
        self.vals = np.full(1 << bits, -1, dtype=np.int64)
        self.used = 0            # slots with a key (live or tombstone)
        self._shift = np.uint64(64 - bits)
        self._mask = np.intp((1 << bits) - 1)

    def __len__(self) -> int:
        return self.live

    def _slots(self, q: np.ndarray) -> np.ndarray:
        return ((q * _MUL) >> self._shift).astype(np.intp)

    def _find(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions in ``q`` of the keys present, their slots) for nonzero keys."""
        pos = self._slots(q)
        idx = np.arange(len(q))
        keys = self.keys
        mask = self._mask
        found_i, found_p = [], []
        while len(idx) > _SCALAR_TAIL:
            k = keys[pos]
            hit = k == q
            if hit.any():
                found_i.append(idx[hit])
                found_p.append(pos[hit])
            go = ~hit & (k != 0)
            idx, q, pos = idx[go], q[go], (pos[go] + 1) & mask
        if len(idx):
            ti, tp = [], []
            for i, h, slot in zip(idx.tolist(), q.tolist(), pos.tolist()):
                while (k := int(keys[slot])) != 0:
                    if k == h:
                        ti.append(i)
                        tp.append(slot)
                        break
                    slot = (slot + 1) & mask
            found_i.append(np.array(ti, dtype=np.intp))
            found_p.append(np.array(tp, dtype=np.intp))
        if not found_i:
            return _EMPTY_I, _EMPTY_I
        return np.concatenate(found_i), np.concatenate(found_p)

    def get(self, q: np.ndarray) -> np.ndarray:
        """The value of each key (-1 where absent)."""
        out = np.full(len(q), -1, dtype=np.int64)
        if self.live:
            i, p = self._find(q)
            out[i] = self.vals[p]
            if self._zero >= 0:
                out[q == 0] = self._zero
        return out

    def take(self, q: np.ndarray) -> np.ndarray:
        """`get`, then remove the keys found (``q`` distinct)."""
        out = np.full(len(q), -1, dtype=np.int64)
        if not self.live:
            return out
        i, p = self._find(q)
        out[i] = self.vals[p]
        gone = p[self.vals[p] >= 0]
        self.vals[gone] = -1
        self.live -= len(gone)
        if self._zero >= 0 and (q == 0).any():
            out[q == 0] = self._zero
            self._zero = -1
            self.live -= 1
        return out

    def take_one(self, h: int) -> int:
        """`take` of one key (a Python int in 0..2^64-1), probing with scalars."""
        if h == 0:
            v, self._zero = self._zero, -1
            self.live -= v >= 0
            return v
        keys = self.keys
        mask = int(self._mask)
        s = ((h * _MUL_INT) & _M64) >> (64 - self.bits)
        while True:
            k = int(keys[s])
            if k == h:
                v = int(self.vals[s])
                if v >= 0:
                    self.vals[s] = -1
                    self.live -= 1
                return v
            if k == 0:
                return -1
            s = (s + 1) & mask

    def put(self, q: np.ndarray, v: np.ndarray) -> None:
        """Set the value of each key (``q`` distinct; ``v`` >= 0)."""
        z = q == 0
        if z.any():
            self.live += self._zero < 0
            self._zero = int(v[z][-1])
            q, v = q[~z], v[~z]
        if not len(q):
            return
        if (self.used + len(q)) > _LOAD * len(self.keys):
            self._grow(self.used + len(q))
        self._put(q, v)

    def _put(self, q: np.ndarray, v: np.ndarray) -> None:
        """Probe for each key: its slot (a new value) or the first empty one (a new key)."""
        pos = self._slots(q)
        keys, vals, mask = self.keys, self.vals, self._mask
        while len(q) > _SCALAR_TAIL:
            k = keys[pos]
            done = k == q
            if done.any():
                p = pos[done]
                self.live += int(np.count_nonzero(vals[p] < 0))
                vals[p] = v[done]
            free = k == 0
            e = np.flatnonzero(free)
            if len(e):
                # several keys may want one empty slot: whichever write lands takes it
                pe = pos[e]
                keys[pe] = q[e]
                win = e[keys[pe] == q[e]]
                vals[pos[win]] = v[win]
                self.used += len(win)
                self.live += len(win)
                done[win] = True
            # a loser looks at its slot again (now taken); the others at the next one
            go = ~done
            q, v, pos = q[go], v[go], (pos + ~free)[go] & mask
        for h, val, slot in zip(q.tolist(), v.tolist(), pos.tolist()):
            while (k := int(keys[slot])) != 0 and k != h:
                slot = (slot + 1) & mask
            if k == 0:
                keys[slot] = h
                self.used += 1
                self.live += 1
            elif vals[slot] < 0:
                self.live += 1
            vals[slot] = val

    def _grow(self, need: int) -> None:
        """A table of enough slots for ``need`` with the live entries only (tombstones go).

        Placed without probing: sorted by home slot (nearly sorted already: the table was in
        slot order, and a home is the old one's top bits and one more), each entry goes to
        max(its home, the previous entry's slot + 1): a running maximum. Entries that would
        run past the end wrap round through `_put`."""
        live = self.vals >= 0
        keys, vals = self.keys[live], self.vals[live]
        bits = self.bits
        while (1 << bits) * _LOAD < max(need, 1.5 * len(keys)):
            bits += 1
        self._alloc(bits)
        self.live = int(self._zero >= 0)
        if not len(keys):
            return
        home = self._slots(keys)
        order = np.argsort(home, kind="stable")
        keys, vals, home = keys[order], vals[order], home[order]
        ar = np.arange(len(keys))
        pos = np.maximum.accumulate(home - ar) + ar
        fit = pos < len(self.keys)
        n = int(np.count_nonzero(fit))
        self.keys[pos[:n]] = keys[:n]
        self.vals[pos[:n]] = vals[:n]
        self.used += n
        self.live += n
        if n < len(keys):
            self._put(keys[n:], vals[n:])
