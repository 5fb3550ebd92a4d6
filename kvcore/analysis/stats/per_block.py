"""The block events one block at a time: the reference semantics of `allocate`, `touch`,
`cache`, `evict` and `free`, and the fallback of the vectorized handlers (`block_events.py`)
for whatever they do not take (a block twice in one event, a field of the wrong type, an
error to report).

The per-block state (`StatsCollector.__init__`): ``ref`` and the steps of each block's
allocation, caching, last use and last release are int64 arrays; ``bhash`` (the hash a block
holds, or None) stays a Python list, so hashes keep any int the stream has and a bad block
index raises the list's error, as before. A block may hold further keys (vLLM's partial
entries, `kvcore/partial_hashes.py`: a group whose block is coarser than the hash block, or a
prefix-match unit finer than the block): a `cache` event of a block already holding a key adds
one to ``bextra[block]``, in order; an `evict` drops one key (the primary first: the next then
leads), and the block itself is evicted (its lifetime, age and idle time counted) when its last
key goes. ``evictions`` counts the keys, as the stream's entries do. Per group, ``cached`` is
the set of hashes some block holds and ``multi`` counts the extra blocks of a hash held by more
than one (vLLM's map allows that; ``cached`` was a hash -> count dict, but the set takes a
whole event in one C call). Each handler first checks that its block lists hold block ids
(`check_ids`): a list index would take a bool or a negative int (JSON `true` as block 1, -1 as
the last block). The same goes for an event's ``group``: each handler compares it with the
header's groups in line (a call per event would cost more than the check) and raises through
`bad_group`; a group index past them raised IndexError (cache, touch, evict) or, where the group
is only compared with the reference group (allocate, free), was taken silently, the request's
blocks then left uncounted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

import numpy as np
import orjson

from kvcore.analysis.event_fields import FieldWorded, shown
from kvcore.analysis.stats.entry_checks import check_hashes
from kvcore.errors import InputError

if TYPE_CHECKING:
    from kvcore.analysis.stats.eviction import EvictionStats
    from kvcore.analysis.stats.history import EvictedHashes
    from kvcore.analysis.stats.misses import MissStats
    from kvcore.analysis.stats.requests import RequestLedger
    from kvcore.analysis.stats.reuse import ReuseStats


def check_ids(blocks, n: int, field: str = "blocks") -> None:
    """Raise (a ValueError) unless ``blocks`` is a list of block ids, ints in ``0 .. n - 1``."""
    if type(blocks) is not list:
        raise FieldWorded(f"'{field}' is not a list of block ids", field)
    for b in blocks:
        if type(b) is not int or not 0 <= b < n:
            raise FieldWorded(f"'{field}' holds {shown(b)}, not a block id (0..{n - 1})", field)


def bad_group(g: object, n: int, field: str = "group") -> NoReturn:
    """Raise the error of an event whose ``group`` (or a CPU tier key's, in ``groups``) is not
    one of the header's ``n`` groups: an `InputError` with the field, the reader adds the file
    and the line."""
    which = "0, its only one" if n == 1 else f"0..{n - 1}"
    raise InputError(f"{orjson.dumps(g).decode()[:40]} is not a KV cache group index of this "
                     f"stream (the header's groups: {which})", field=field)


class PerBlockEvents:
    # the collector's state these handlers read and write (set by StatsCollector.__init__)
    ref: np.ndarray
    bhash: list
    bextra: dict[int, list]
    alloc_step: np.ndarray
    cache_step: np.ndarray
    use_step: np.ndarray
    use_adm: np.ndarray
    free_step: np.ndarray
    cached: list[set]
    multi: list[dict]
    evicted: list[EvictedHashes]
    group_bs: list[int]
    n_groups: int               # the header's groups: an event's `group` is 0 .. n_groups - 1
    ref_group: int
    step: int
    admissions: int
    used: int
    cached_free: int
    step_evictions: int
    reqs: RequestLedger
    ev: EvictionStats
    reuse: ReuseStats
    miss: MissStats

    def _peak(self) -> None:
        raise NotImplementedError

    def _allocate_each(self, ev: dict) -> None:
        ref, bhash, step = self.ref, self.bhash, self.step
        blocks = ev["blocks"]
        check_ids(blocks, len(ref))
        g = ev["group"]
        if type(g) is not int or not 0 <= g < self.n_groups:
            bad_group(g, self.n_groups)
        for b in blocks:
            if bhash[b] is not None or ref[b]:
                raise ValueError(f"block {b} allocated while in use or still cached "
                                 f"(ref count {ref[b]})")
            ref[b] = 1
            self.alloc_step[b] = step
        self.used += len(blocks)
        if g == self.ref_group:
            self.reqs.hold(ev["req"], len(blocks))
        self._peak()

    def _touch_each(self, ev: dict) -> None:
        ref, step, adm = self.ref, self.step, self.admissions
        g = ev["group"]
        if type(g) is not int or not 0 <= g < self.n_groups:
            bad_group(g, self.n_groups)
        blocks = ev["blocks"]
        hashes = ev["hashes"]
        check_hashes(hashes)
        check_ids(blocks, len(ref))
        r = self.reuse
        hits = r.hits[g]
        depth = r.depth[g]
        use_step, use_adm, cache_step = self.use_step, self.use_adm, self.cache_step
        for i, b in enumerate(blocks):
            if ref[b] == 0:
                self.cached_free -= 1
                self.used += 1
            ref[b] += 1
            h = hashes[i]
            hits[h] += 1
            if i > depth.get(h, -1):
                depth[h] = i
            r.age_at_hit.add(int(step - cache_step[b]))
            r.reuse_gap.add(int(step - use_step[b]))
            r.reuse_distance.add(int(adm - use_adm[b]))
            use_step[b] = step
            use_adm[b] = adm
        r.touched_blocks += len(blocks)
        if g == self.ref_group:
            self.reqs.hold(ev["req"], len(blocks))
        self._peak()

    def _cache_each(self, ev: dict) -> None:
        step, adm = self.step, self.admissions
        g = ev["group"]
        if type(g) is not int or not 0 <= g < self.n_groups:
            bad_group(g, self.n_groups)
        hashes = ev["hashes"]
        check_hashes(hashes)
        cached, multi = self.cached[g], self.multi[g]
        bhash, cache_step = self.bhash, self.cache_step
        use_step, use_adm = self.use_step, self.use_adm
        fresh = []                            # hashes no block held: were they evicted before?
        check_ids(ev["blocks"], len(self.ref))
        bextra = self.bextra
        for i, b in enumerate(ev["blocks"]):
            h = hashes[i]
            held = bhash[b]
            if held is None:
                bhash[b] = h
            elif held == h or h in bextra.get(b, ()):
                continue                          # a key it holds already: nothing new
            else:
                bextra.setdefault(b, []).append(h)
            cache_step[b] = step
            use_step[b] = step
            use_adm[b] = adm
            if h in cached:
                multi[h] = multi.get(h, 0) + 1
            else:
                cached.add(h)
                fresh.append(h)
        if self.miss.maybe_in_flight and g == self.ref_group:
            self.miss.on_cached(hashes, step, ev["req"])
        if fresh:
            self._regret(self.evicted[g].pop_many(fresh), g)

    def _regret(self, back: list[int], g: int) -> None:
        """Hashes cached again after their eviction (``back``: their history values)."""
        if back:
            e = self.ev
            e.regret_evictions += len(back)
            e.regret_tokens += self.group_bs[g] * len(back)
            if len(back) == 1:
                e.regret_gap.add(self.step - (back[0] >> 32))
            else:
                e.regret_gap.add_array(self.step - (np.array(back, dtype=np.int64) >> 32))

    def _evictor(self, req) -> int:
        rid = self.reqs.index.get(req)
        if rid is None:
            rid = 0xFFFFFFFF if req is None else self.reqs.rid(req)
        return rid

    def _evict_each(self, ev: dict) -> None:
        step = self.step
        g = ev["group"]
        if type(g) is not int or not 0 <= g < self.n_groups:
            bad_group(g, self.n_groups)
        hashes = ev["hashes"]
        check_hashes(hashes)
        blocks = ev["blocks"]
        check_ids(blocks, len(self.ref))
        rid = self._evictor(ev["req"])
        cached, multi = self.cached[g], self.multi[g]
        history = self.evicted[g]
        packed = (step << 32) | rid
        bhash, ref = self.bhash, self.ref
        e = self.ev
        bextra = self.bextra
        for b, h in zip(blocks, hashes, strict=True):
            more = bextra.get(b)
            if bhash[b] == h:
                bhash[b] = more.pop(0) if more else None
            elif more and h in more:
                more.remove(h)
            else:
                raise ValueError(f"evict of block {b} with hash {h}, which it does not hold")
            if more is not None and not more:
                del bextra[b]
            extra = multi.get(h)
            if extra:                            # another block still holds the hash
                if extra > 1:
                    multi[h] = extra - 1
                else:
                    del multi[h]
            else:
                cached.remove(h)
                history[h] = packed
            if bhash[b] is not None:              # the block keeps another key
                continue
            e.lifetime.add(int(step - self.alloc_step[b]))
            e.age_at_evict.add(int(step - self.cache_step[b]))
            if ref[b] == 0:
                self.cached_free -= 1
                e.idle.add(int(step - self.free_step[b]))
            else:
                e.evicted_in_use += 1
        n = len(blocks)
        e.evictions += n
        e.by_req[rid] += n
        self.step_evictions += n

    def _free_each(self, ev: dict) -> None:
        ref, bhash = self.ref, self.bhash
        g = ev["group"]
        if type(g) is not int or not 0 <= g < self.n_groups:
            bad_group(g, self.n_groups)
        blocks = ev["blocks"]
        check_ids(blocks, len(ref))
        check_ids(ev["freed"], len(ref), "freed")
        for b in blocks:
            ref[b] -= 1
        step = self.step
        for b in ev["freed"]:
            if ref[b] != 0:
                raise ValueError(f"block {b} listed in 'freed' but its ref count is {ref[b]}")
            self.used -= 1
            if bhash[b] is not None:
                self.cached_free += 1
            self.free_step[b] = step
        if g == self.ref_group:
            self.reqs.release(ev["req"], len(blocks))
