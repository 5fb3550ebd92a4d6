"""The block events of a chunk of the stream, all at once: the same state transitions as
`per_block.py`, computed over columns instead of one block at a time.

A chunk's block events become *ops*, one per block mention, in stream order: `ALLOC`,
`TOUCH`, `CACHE`, `EVICT`, and a `free` event's `DEC` (each of its ``blocks``) then `FRD` (each
of its ``freed``). Each block's ops are gathered by a stable sort on the block id, so the state a
block had before an op is either the state the previous op of that block left (a prefix sum of
the ref-count changes, or the last op that set a field: a running maximum of indices) or, for
its first op, the per-block arrays (hashes: chunk_hashes.py).

`BlockPass` only computes; the caller commits. Whenever the reference would
raise or do something unusual (an `allocate` of a block in use or cached, an `evict` of a hash
the block does not hold, a `freed` block still referenced, a `cache` of a block that holds a
hash), ``ok`` is False and the chunk goes through the per-block handlers instead,
which raise the reader's error or do what they do.
"""

from __future__ import annotations

import numpy as np

ALLOC, TOUCH, CACHE, EVICT, DEC, FRD = range(6)
# the ref-count change of each op (an allocate sets 1 on a block it checks is at 0)
_REF_DELTA = np.array([1, 1, 0, 0, -1, 0], dtype=np.int64)


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For sorted ``keys``: (the index of the first op of each op's run, a mask of the first
    op of each run, the index of the last op of each run)."""
    n = len(keys)
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    last = np.empty(n, dtype=bool)
    last[-1] = True
    last[:-1] = first[1:]
    return start, first, np.flatnonzero(last)


def _last_set(mask: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(for each op, the index of the last op of its run strictly before it with ``mask``, else
    -1; the same including the op itself)."""
    inc = np.maximum.accumulate(np.where(mask, np.arange(len(mask)), -1))
    before = np.empty_like(inc)
    before[0] = -1
    before[1:] = inc[:-1]
    before[before < start] = -1
    inc = inc.copy()
    inc[inc < start] = -1
    return before, inc


class BlockPass:
    """The per-op state of one chunk's block ops, and the per-block state after them.

    Built from the ops in stream order: ``block``, ``code``, ``step`` (int64), ``hsh``
    (uint64; 0 where the op has no hash), and the collector's per-block arrays. ``ok`` is False
    when the chunk needs the per-block handlers (nothing is computed then)."""

    def __init__(self, c, block: np.ndarray, code: np.ndarray, step: np.ndarray,
                 hsh: np.ndarray, adm: np.ndarray) -> None:
        order = np.argsort(block, kind="stable")
        self.order = order
        b = block[order]
        cs = code[order]
        ss = step[order]
        hs = hsh[order]
        self.adm = adm[order]
        start, _, last = _runs(b)
        delta = _REF_DELTA[cs]
        inc = np.cumsum(delta)
        base = inc[start] - delta[start]
        ref0 = c.ref[b]
        ref_before = ref0 + (inc - delta - base)
        is_cache = cs == CACHE
        is_evict = cs == EVICT
        p_hash, l_hash = _last_set(is_cache | is_evict, start)
        has_before = np.where(p_hash >= 0, cs[p_hash] == CACHE, c.has[b])
        hval_before = np.where(p_hash >= 0, hs[p_hash], c.bh[b])
        is_alloc = cs == ALLOC
        is_frd = cs == FRD
        bad = is_alloc & ((ref_before != 0) | has_before)
        bad |= is_cache & has_before
        bad |= is_evict & (~has_before | (hval_before != hs))
        bad |= is_frd & (ref_before != 0)
        self.ok = not bad.any()
        if not self.ok:
            return
        is_touch = cs == TOUCH
        self.b, self.cs, self.ss = b, cs, ss
        self.ref_before = ref_before
        self.has_before = has_before
        self.start, self.last = start, last
        self.ref_final = ref0[last] + (inc[last] - base[last])
        self.l_hash = l_hash[last]
        self.hs = hs
        # the step a field was last set at, before each op (else the block's array)
        self.fields = {}
        for name, mask in (("alloc_step", is_alloc), ("cache_step", is_cache),
                           ("use_step", is_cache | is_touch), ("free_step", is_frd)):
            p, li = _last_set(mask, start)
            self.fields[name] = (p, li[last])
        self.is_touch, self.is_evict, self.is_frd = is_touch, is_evict, is_frd

    def before(self, c, name: str, where: np.ndarray) -> np.ndarray:
        """The field's value before the ops at sorted positions ``where``."""
        p = self.fields[name][0][where]
        return np.where(p >= 0, self.ss[p], getattr(c, name)[self.b[where]])

    def use_adm_before(self, c, where: np.ndarray) -> np.ndarray:
        p = self.fields["use_step"][0][where]
        return np.where(p >= 0, self.adm[p], c.use_adm[self.b[where]])

    def commit(self, c) -> None:
        """Write the per-block state the chunk leaves into the collector's arrays."""
        blocks = self.b[self.last]
        c.ref[blocks] = self.ref_final
        lh = self.l_hash
        ok = lh >= 0
        if ok.any():
            c.has[blocks[ok]] = self.cs[lh[ok]] == CACHE
            c.bh[blocks[ok]] = self.hs[lh[ok]]
        for name, (_, li) in self.fields.items():
            ok = li >= 0
            if ok.any():
                getattr(c, name)[blocks[ok]] = self.ss[li[ok]]
                if name == "use_step":
                    c.use_adm[blocks[ok]] = self.adm[li[ok]]


def block_effects(c, bp: BlockPass, evi: np.ndarray, n_events: int) -> tuple:
    """Count the distributions of the chunk's `touch` and `evict` ops (order does not matter:
    histograms) and return, per event, the touched blocks that were free (ref count 0), the
    evicted blocks that were idle, and the freed blocks that hold a hash."""
    ev_sorted = evi[bp.order]
    ss = bp.ss
    r = c.reuse
    t = np.flatnonzero(bp.is_touch)
    fresh = idle_n = None
    if len(t):
        r.age_at_hit.add_array(ss[t] - bp.before(c, "cache_step", t))
        r.reuse_gap.add_array(ss[t] - bp.before(c, "use_step", t))
        r.reuse_distance.add_array(bp.adm[t] - bp.use_adm_before(c, t))
        fresh = np.bincount(ev_sorted[t[bp.ref_before[t] == 0]], minlength=n_events)
    x = np.flatnonzero(bp.is_evict)
    if len(x):
        e = c.ev
        st = ss[x]
        e.lifetime.add_array(st - bp.before(c, "alloc_step", x))
        e.age_at_evict.add_array(st - bp.before(c, "cache_step", x))
        idle = bp.ref_before[x] == 0
        k = int(np.count_nonzero(idle))
        e.evicted_in_use += len(x) - k
        if k:
            xi = x[idle]
            e.idle.add_array(ss[xi] - bp.before(c, "free_step", xi))
            idle_n = np.bincount(ev_sorted[xi], minlength=n_events)
    f = np.flatnonzero(bp.is_frd & bp.has_before)
    held = np.bincount(ev_sorted[f], minlength=n_events) if len(f) else None
    return fresh, idle_n, held
