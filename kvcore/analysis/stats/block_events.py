"""The block events, vectorized: each handler does a whole event with a few numpy and C-level
set/dict calls instead of a Python loop per block, and hands the event to the per-block
reference (`per_block.py`) whenever it is not the plain case: a block named twice, a hash
held by another block too (evict), hashes not matching blocks, any field of an unexpected
type. The checks come before any state changes (two are undone: evict's set update, free's
decrement), so the reference starts from the same state.

Two shapes: a single-block event (three quarters of the events on the conversation trace:
one decode block allocated, cached, evicted) takes scalar steps, no arrays; a larger one
(prefill chunks, ~100 blocks) takes one index array and fancy indexing. Distributions go to
`BulkDist`. Measured per handler on the conversation trace's first 3,000 requests (0.27 M
events), old per-block code -> this: evict 6.7 -> 3.7 s, cache 4.7 -> 2.9 s, free 1.1 ->
0.65 s, touch 0.24 -> 0.17 s; multi-block allocate got slower (0.23 -> 0.59 s: its checks
cost more than the old loop did).
"""

from __future__ import annotations

from collections import Counter
from itertools import repeat
from operator import itemgetter

import numpy as np

from kvcore.analysis.stats.per_block import PerBlockEvents, bad_group

_INT = {int}


def _ids_ok(blocks: list, n: int) -> bool:
    """Whether ``blocks`` are all block ids (ints in 0..n-1), by checks that run in C: a list
    index would also take a bool or a negative int. The per-block path reports what is not."""
    try:
        return not blocks or (set(map(type, blocks)) == _INT and min(blocks) >= 0
                              and max(blocks) < n)
    except TypeError:       # not a list
        return False


def _held(bhash: list, blocks: list) -> tuple:
    """The hash each block holds; raises for what is not a block id."""
    if not _ids_ok(blocks, len(bhash)):
        raise IndexError("not block ids")
    if len(blocks) > 1:
        return itemgetter(*blocks)(bhash)
    return (bhash[blocks[0]],) if blocks else ()


def _index(bhash: list, blocks) -> tuple[tuple, np.ndarray] | None:
    """(the hash each block holds, the blocks as an index array), or None when the blocks are
    not distinct valid indices (then the per-block path runs and raises what it raises)."""
    try:
        held = _held(bhash, blocks)
        n = len(blocks)
        if len(set(blocks)) != n:
            return None
        return held, np.fromiter(blocks, dtype=np.intp, count=n)
    except Exception:       # noqa: BLE001 - whatever it is, the per-block path reports it
        return None


class BlockEvents(PerBlockEvents):
    def _allocate(self, ev: dict) -> None:
        blocks = ev["blocks"]
        g = ev["group"]
        if type(g) is not int or not 0 <= g < self.n_groups:
            bad_group(g, self.n_groups)
        ref = self.ref
        if type(blocks) is not list:
            return self._allocate_each(ev)
        if len(blocks) == 1 and type(b := blocks[0]) is int and 0 <= b < len(ref):
            if self.bhash[b] is not None or ref[b]:
                return self._allocate_each(ev)
            ref[b] = 1
            self.alloc_step[b] = self.step
        else:
            got = _index(self.bhash, blocks)
            if got is None or got[0].count(None) != len(blocks) or ref[got[1]].any():
                return self._allocate_each(ev)
            ref[got[1]] = 1
            self.alloc_step[got[1]] = self.step
        self.used += len(blocks)
        if g == self.ref_group:
            self.reqs.hold(ev["req"], len(blocks))
        self._peak()

    def _touch(self, ev: dict) -> None:
        g = ev["group"]
        if type(g) is not int or not 0 <= g < self.n_groups:
            bad_group(g, self.n_groups)
        blocks = ev["blocks"]
        hashes = ev["hashes"]
        if type(blocks) is not list or type(hashes) is not list:
            return self._touch_each(ev)
        got = _index(self.bhash, blocks)
        n = len(blocks)
        if got is None or len(hashes) != n:
            return self._touch_each(ev)
        idx = got[1]
        ref, step, adm = self.ref, self.step, self.admissions
        r = self.reuse
        before = ref[idx]
        fresh = n - int(np.count_nonzero(before))   # ref count 0: cached, evictable until now
        self.cached_free -= fresh
        self.used += fresh
        ref[idx] = before + 1
        r.hit_hashes(g, hashes)
        r.age_at_hit.add_array(step - self.cache_step[idx])
        r.reuse_gap.add_array(step - self.use_step[idx])
        r.reuse_distance.add_array(adm - self.use_adm[idx])
        self.use_step[idx] = step
        self.use_adm[idx] = adm
        r.touched_blocks += n
        if g == self.ref_group:
            self.reqs.hold(ev["req"], n)
        self._peak()

    def _cache(self, ev: dict) -> None:
        g = ev["group"]
        if type(g) is not int or not 0 <= g < self.n_groups:
            bad_group(g, self.n_groups)
        hashes = ev["hashes"]
        blocks = ev["blocks"]
        if type(blocks) is not list or type(hashes) is not list:
            return self._cache_each(ev)
        n = len(blocks)
        step, adm = self.step, self.admissions
        cached = self.cached[g]
        if not _ids_ok(blocks, len(self.bhash)):
            return self._cache_each(ev)           # it reports the bad id
        if n == 1 and len(hashes) == 1:
            b = blocks[0]
            h = hashes[0]
            if self.bhash[b] is not None:         # a further key (per_block.py)
                return self._cache_each(ev)
            self.bhash[b] = h
            self.cache_step[b] = step
            self.use_step[b] = step
            self.use_adm[b] = adm
            if h in cached:
                self.multi[g][h] = self.multi[g].get(h, 0) + 1
                fresh = None
            else:
                cached.add(h)
                fresh = h
        else:
            bhash = self.bhash
            # a block named twice or holding a key gets a further key: the per-block path
            if len(hashes) != n or _held(bhash, blocks).count(None) != n or len(set(blocks)) != n:
                return self._cache_each(ev)
            for b, h in zip(blocks, hashes):
                bhash[b] = h
            idx = np.fromiter(blocks, dtype=np.intp, count=n)
            self.cache_step[idx] = step
            self.use_step[idx] = step
            self.use_adm[idx] = adm
            fresh_list = self._count_cached(g, hashes)
        if self.miss.maybe_in_flight and g == self.ref_group:
            self.miss.on_cached(hashes, step, ev["req"])
        history = self.evicted[g]
        if n == 1:
            if fresh is not None and len(history):
                back = history.pop_one(fresh)
                if back is not None:
                    self._regret([back], g)
        elif fresh_list and len(history):
            self._regret(history.pop_many(fresh_list), g)

    def _count_cached(self, g: int, hashes: list) -> list:
        """Count a cache event's hashes as held; return those no block held before (once each)."""
        cached = self.cached[g]
        if cached.isdisjoint(hashes):
            before = len(cached)
            cached.update(hashes)
            if len(cached) - before == len(hashes):
                return hashes
            multi = self.multi[g]                 # a hash twice in the event
            for h, k in Counter(hashes).items():
                if k > 1:
                    multi[h] = k - 1
            return list(dict.fromkeys(hashes))
        multi = self.multi[g]
        fresh = []
        for h in hashes:
            if h in cached:
                multi[h] = multi.get(h, 0) + 1
            else:
                cached.add(h)
                fresh.append(h)
        return fresh

    def _evict(self, ev: dict) -> None:
        g = ev["group"]
        if type(g) is not int or not 0 <= g < self.n_groups:
            bad_group(g, self.n_groups)
        hashes = ev["hashes"]
        blocks = ev["blocks"]
        rid = self._evictor(ev["req"])
        if type(blocks) is not list or type(hashes) is not list:
            return self._evict_each(ev)
        n = len(blocks)
        multi = self.multi[g]
        bhash = self.bhash
        cached = self.cached[g]
        # the plain case: each block holds its hash, no other block holds it
        if n == 1 and type(b := blocks[0]) is int and 0 <= b < len(bhash) and len(hashes) == 1:
            h = hashes[0]
            if bhash[b] != h or h in multi or h not in cached or b in self.bextra:
                return self._evict_each(ev)
        else:
            try:
                held = _held(bhash, blocks)
            except Exception:   # noqa: BLE001 - a bad index: the per-block path reports it
                return self._evict_each(ev)
            # (`issuperset`: all in `cached`, so the undo below puts back exactly what went)
            if (held != tuple(hashes) or not cached.issuperset(hashes)
                    or (multi and not multi.keys().isdisjoint(hashes))
                    or (self.bextra and not self.bextra.keys().isdisjoint(blocks))):
                return self._evict_each(ev)
            # No other block holds these hashes, so n blocks drop n hashes from `cached`;
            # fewer means a block named twice (checked so, not with a set: ~4 µs an event)
            before = len(cached)
            cached.difference_update(hashes)
            if before - len(cached) != n:
                cached.update(hashes)
                return self._evict_each(ev)
        step = self.step
        packed = (step << 32) | rid
        history = self.evicted[g]
        e = self.ev
        ref = self.ref
        if n == 1:
            bhash[b] = None
            cached.remove(h)
            history.put_one(h, packed)
            e.lifetime.add(step - self.alloc_step[b])
            e.age_at_evict.add(step - self.cache_step[b])
            if ref[b] == 0:
                self.cached_free -= 1
                e.idle.add(step - self.free_step[b])
            else:
                e.evicted_in_use += 1
        else:
            for b in blocks:
                bhash[b] = None
            history.put_many(hashes, repeat(packed))
            idx = np.fromiter(blocks, dtype=np.intp, count=n)
            e.lifetime.add_array(step - self.alloc_step[idx])
            e.age_at_evict.add_array(step - self.cache_step[idx])
            idle = ref[idx] == 0
            k = int(np.count_nonzero(idle))
            self.cached_free -= k
            e.evicted_in_use += n - k
            if k:
                e.idle.add_array(step - self.free_step[idx if k == n else idx[idle]])
        if history.full():
            history.merge()
        e.evictions += n
        e.by_req[rid] += n
        self.step_evictions += n

    def _free(self, ev: dict) -> None:
        # Blocks or freed named twice need no per-block path: the decrement is `subtract.at`
        # (once per mention) and the counts below count every mention, as the loop did.
        g = ev["group"]
        if type(g) is not int or not 0 <= g < self.n_groups:
            bad_group(g, self.n_groups)
        blocks = ev["blocks"]
        bhash = self.bhash
        if type(blocks) is not list:
            return self._free_each(ev)
        try:
            _held(bhash, blocks)                  # a bad index: the per-block path raises
            idx = np.fromiter(blocks, dtype=np.intp, count=len(blocks))
            freed = ev["freed"]
            fheld = _held(bhash, freed) if type(freed) is list else None
        except Exception:       # noqa: BLE001 - whatever it is, the per-block path reports it
            fheld = None
        if fheld is None:
            return self._free_each(ev)
        ref = self.ref
        np.subtract.at(ref, idx, 1)
        fidx = np.fromiter(freed, dtype=np.intp, count=len(freed))
        if ref[fidx].any():
            np.add.at(ref, idx, 1)                # undo: the reference raises
            return self._free_each(ev)
        self.used -= len(freed)
        self.cached_free += len(freed) - fheld.count(None)
        self.free_step[fidx] = self.step
        if g == self.ref_group:
            self.reqs.release(ev["req"], len(blocks))
