"""The block events that register and drop keys, vectorized: `cache` (a block's hash held, the
evicted history asked for regret) and `evict` (its hash dropped into that history). The plain
case (each block named once, holding no key yet / exactly its one hash, no other block holding
that hash) takes a whole event in a few set and numpy calls; anything else (a block named
twice, a further key of vLLM's partial entries, a hash on several blocks, a bad field) goes to
the per-block reference (`per_block.py`), from the same state: evict's set update is undone
first. Measured per handler on the conversation trace's first 3,000 requests (0.27 M events),
old per-block code -> this: evict 6.7 -> 3.7 s, cache 4.7 -> 2.9 s. The ref-count events
(`allocate`, `touch`, `free`) are `block_events.py`'s.
"""

from __future__ import annotations

from collections import Counter
from itertools import repeat

import numpy as np

from kvcore.analysis.stats.block_ids import held, ids_ok
from kvcore.analysis.stats.entry_checks import check_hashes
from kvcore.analysis.stats.per_block import PerBlockEvents, bad_group


class KeyEvents(PerBlockEvents):
    def _cache(self, ev: dict) -> None:
        g = ev["group"]
        if type(g) is not int or not 0 <= g < self.n_groups:
            bad_group(g, self.n_groups)
        hashes = ev["hashes"]
        check_hashes(hashes)
        blocks = ev["blocks"]
        if type(blocks) is not list or type(hashes) is not list:
            return self._cache_each(ev)
        n = len(blocks)
        step, adm = self.step, self.admissions
        cached = self.cached[g]
        if not ids_ok(blocks, len(self.bhash)):
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
            if len(hashes) != n or held(bhash, blocks).count(None) != n or len(set(blocks)) != n:
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
        check_hashes(hashes)
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
                holding = held(bhash, blocks)
            except Exception:   # noqa: BLE001 - a bad index: the per-block path reports it
                return self._evict_each(ev)
            # (`issuperset`: all in `cached`, so the undo below puts back exactly what went)
            if (holding != tuple(hashes) or not cached.issuperset(hashes)
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
