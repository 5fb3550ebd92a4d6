"""`read_segments`: the event stream read for `kvcli stats` a segment at a time, the fast path of
`events_reader.read_stream` + the collector's handlers (which stay the reference: tests compare
the two, and this falls back on them).

A segment is the events between two `admit` lines (an admission reads the cached hashes and
the eviction history, so the state must be exact there; nothing else reads it). A segment's
block events are done in columns (`segment_state`: one sort per segment in place of a Python
loop and a few numpy calls per event; ~90 events and ~4,000 block mentions a segment on the
conversation trace), then one pass over its events, in order, does what depends on order and
is cheap (ref-group blocks per request, the usage peak and the step samples, `in_flight`, the
evictors, the hit counters, and the request events). What it skips, and why that is exact:

* the per-block handlers' Python work per block: the same transitions, by sort (see
  segment_state.py); the per-block state is also kept as numpy arrays (``bh``, ``has``: the
  hash each block holds), the reference's ``bhash`` list is brought up to date only when the
  reference runs;
* nothing else: any event the columns do not take as they are (a field missing or of another
  type, a block id out of range or negative, an evictor that never arrived, a hash outside
  0..2^64-1) or any transition the reference would refuse or treat specially sends the whole
  segment, untouched, through the per-event handlers (`_each`), which raise the reader's
  error at the same line or do what they do.

Measured on the conversation trace's 1 GB stream (benchmarks/stats_speed.py): see
docs/stats.md.
"""

from __future__ import annotations

from itertools import chain

import numpy as np
import orjson

from kvcore.analysis.events_reader import EVENT_ERRORS, event_error
from kvcore.analysis.stats.history_table import TableBlockKeys, TableHistory
from kvcore.analysis.stats.segment_state import (
    ALLOC, CACHE, DEC, EVICT, FRD, TOUCH, BlockPass, HashPass, block_effects,
)
from kvcore.errors import InputError

_BLOCK = {"allocate": ALLOC, "touch": TOUCH, "cache": CACHE, "evict": EVICT, "free": DEC}
_SYNC = frozenset(("admit", "end", "interrupted"))     # read or end the state: flush first
_NO_RID = 0xFFFFFFFF                                   # `_evictor(None)`


def read_segments(name: str, lines, c) -> str:
    """`read_stream(name, lines, c)` for a `StatsCollector`, a segment at a time (the module
    docstring); the same result and the same errors. Returns the last kind."""
    seg = Segments(name, c)
    handlers = c.handlers
    loads = orjson.loads
    lineno = 1
    seq = 0
    last = None
    ev = None
    read_step: object = object()     # the reader's own previous step, as read_stream's
    try:
        for lineno, line in enumerate(lines, start=2):
            if last is not None:
                if line.strip():
                    raise InputError(f"data after the '{last}' line", path=name, line=lineno)
                continue
            ev = loads(line)
            if ev["seq"] != seq:
                raise InputError(f"expected seq {seq}, got {ev['seq']!r} (lines missing or out of "
                                 "order)", path=name, line=lineno, field="seq")
            seq += 1
            step = ev["step"]
            if step != read_step:
                if not isinstance(step, int) or step < 0:
                    raise InputError(f"not a step number: {step!r}", path=name, line=lineno,
                                     field="step")
                read_step = step
            kind = ev["kind"]
            handler = handlers.get(kind)
            if handler is None:
                raise InputError(f"unknown event kind {kind!r}", path=name, line=lineno,
                                 field="kind")
            if kind not in _SYNC:
                seg.events.append((lineno, ev))
                continue
            seg.flush()
            if step != seg.cur_step:
                c.advance(step, ev["t_ms"])
                seg.cur_step = step
            handler(ev)
            if kind != "admit":
                last = kind
    except EVENT_ERRORS as err:
        seg.flush()                 # an earlier line's error comes first, as it would have
        raise event_error(err, name, lineno, ev) from None
    seg.flush()
    if last is None:
        raise InputError("truncated stream: ends without an 'end' (or 'interrupted') line",
                         path=name, line=lineno)
    return last


class Segments:
    """The pending segment, and the numpy copy of the per-block hashes the columns use."""

    def __init__(self, name: str, c) -> None:
        self.name = name
        self.c = c
        self.events: list[tuple[int, dict]] = []
        self.cur_step: object = object()     # the last event's step (advance when it changes)
        self.fast = self._arrays_from_list()
        self.list_stale = False              # ``c.bhash`` behind the arrays
        # the history and the block keys in hash tables (history_table.py; nothing is in
        # them before the first event)
        c.evicted[:] = [TableHistory() for _ in c.evicted]
        c.miss.seen = TableBlockKeys()

    def flush(self) -> None:
        events = self.events
        if not events:
            return
        self.events = []
        if not (self.fast and self._columns(events)):
            self._each(events)

    # -- the reference, and its state -------------------------------------------------------
    def _each(self, events: list[tuple[int, dict]]) -> None:
        """The events one by one through the collector's handlers (the reference)."""
        c = self.c
        if self.list_stale:
            bh = c.bh.tolist()
            for i in np.flatnonzero(~c.has).tolist():
                bh[i] = None
            c.bhash = bh
            self.list_stale = False
        handlers = c.handlers
        lineno, ev = 0, None
        try:
            for lineno, ev in events:
                step = ev["step"]
                if step != self.cur_step:
                    c.advance(step, ev["t_ms"])
                    self.cur_step = step
                handlers[ev["kind"]](ev)
        except EVENT_ERRORS as err:
            raise event_error(err, self.name, lineno, ev) from None
        if self.fast:
            self.fast = self._arrays_from_list()

    def _arrays_from_list(self) -> bool:
        """``c.bh`` / ``c.has`` from ``c.bhash``; False when a block holds something that is no
        uint64 int (a hand-built stream: the reference does the rest)."""
        c = self.c
        held = c.bhash
        if not set(map(type, held)) <= {int, type(None)}:
            return False
        try:
            c.bh = np.array([0 if h is None else h for h in held], dtype=np.uint64)
        except OverflowError:
            return False
        c.has = np.fromiter((h is not None for h in held), dtype=bool, count=len(held))
        return True

    # -- the fast path ----------------------------------------------------------------------
    def _columns(self, events: list[tuple[int, dict]]) -> bool:
        """The segment in columns (module docstring); False, with nothing changed, when it
        needs the reference."""
        c = self.c
        try:
            got = self._prepare(events)
        except Exception:       # noqa: BLE001 - whatever it is, the reference reports it
            return False
        if got is None:
            return False
        if got is True:
            return self._light(events, [_BLOCK.get(ev["kind"]) for _, ev in events],
                               None, None, None)
        bp, hp, evi, kinds = got
        adm = c.admissions
        fresh, idle, held = block_effects(c, bp, evi, len(events), adm)
        bp.commit(c, adm)
        for g, p in hp:
            p.commit(c, g)
        self.list_stale = True
        return self._light(events, kinds, fresh, idle, held)

    def _prepare(self, events: list[tuple[int, dict]]):
        """The segment's block passes (nothing changed yet): (BlockPass, [(group,
        HashPass)], the event of each mention, the kind code of each event); True when it has
        no block mention; None when it needs the reference."""
        c = self.c
        cols = _gather(c, events)
        if cols is None:
            return None
        lists, codes, evs, steps, hlists, packed, kinds = cols
        n = len(c.ref)
        lens = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        flat = list(chain.from_iterable(lists))
        hflat = list(chain.from_iterable(hlists))
        if not set(map(type, flat)) <= {int} or not set(map(type, hflat)) <= {int}:
            return None
        try:
            block = np.array(flat, dtype=np.int64)
            hq = np.array(hflat, dtype=np.uint64)
        except OverflowError:
            return None
        if not len(block):
            return True if not len(hq) else None
        if block.min() < 0 or block.max() >= n:
            return None
        code = np.repeat(np.array(codes, dtype=np.int8), lens)
        step = np.repeat(np.array(steps, dtype=np.int64), lens)
        evi = np.repeat(np.array(evs, dtype=np.int64), lens)
        hashed = (code == CACHE) | (code == EVICT)
        hsh = np.zeros(len(block), dtype=np.uint64)
        hsh[hashed] = hq
        bp = BlockPass(c, block, code, step, hsh)
        if not bp.ok:
            return None
        hp = []
        if len(hq):
            groups = np.repeat(np.array([g for g, _ in packed], dtype=np.int64),
                               np.fromiter(map(len, hlists), dtype=np.int64, count=len(hlists)))
            pk = np.repeat(np.array([p for _, p in packed], dtype=np.int64),
                           np.fromiter(map(len, hlists), dtype=np.int64, count=len(hlists)))
            hcode, hstep = code[hashed], step[hashed]
            for g in np.unique(groups).tolist():
                sel = groups == g
                p = HashPass(c.cached[g], c.multi[g], hq[sel], hcode[sel], hstep[sel], pk[sel])
                if not p.ok:
                    return None
                hp.append((g, p))
        return bp, hp, evi, kinds

    def _light(self, events, kinds, fresh, idle, held) -> bool:
        """The segment's events in order: what depends on order and is cheap."""
        c = self.c
        ref_group = c.ref_group
        reqs = c.reqs
        r = c.reuse
        e = c.ev
        miss = c.miss
        handlers = c.handlers
        fresh = fresh.tolist() if fresh is not None else None
        idle = idle.tolist() if idle is not None else None
        held = held.tolist() if held is not None else None
        lineno, ev = 0, None
        try:
            for i, (lineno, ev) in enumerate(events):
                step = ev["step"]
                if step != self.cur_step:
                    c.advance(step, ev["t_ms"])
                    self.cur_step = step
                k = kinds[i]
                if k is None:
                    handlers[ev["kind"]](ev)
                elif k == ALLOC:
                    n = len(ev["blocks"])
                    c.used += n
                    if ev["group"] == ref_group:
                        reqs.hold(ev["req"], n)
                    c._peak()
                elif k == EVICT:
                    n = len(ev["blocks"])
                    if idle is not None:
                        c.cached_free -= idle[i]
                    e.evictions += n
                    e.by_req[c._evictor(ev["req"])] += n
                    c.step_evictions += n
                elif k == DEC:
                    freed = len(ev["freed"])
                    c.used -= freed
                    if held is not None:
                        c.cached_free += held[i]
                    if ev["group"] == ref_group:
                        reqs.release(ev["req"], len(ev["blocks"]))
                elif k == CACHE:
                    if miss.maybe_in_flight and ev["group"] == ref_group:
                        miss.on_cached(ev["hashes"], c.step, ev["req"])
                else:
                    _touch(c, ev, fresh[i] if fresh is not None else 0, r, reqs, ref_group)
        except EVENT_ERRORS as err:
            raise event_error(err, self.name, lineno, ev) from None
        return True


def _touch(c, ev: dict, fresh: int, r, reqs, ref_group: int) -> None:
    """A touch's ordered part: the ref-count-0 blocks it takes out of the free queue, the hit
    counters (insertion order decides ties of `most_common`), the peak."""
    g = ev["group"]
    hashes = ev["hashes"]
    c.cached_free -= fresh
    c.used += fresh
    r.hits[g].update(hashes)
    depth = r.depth[g]
    for i, h in enumerate(hashes):
        if i > depth.get(h, -1):
            depth[h] = i
    n = len(ev["blocks"])
    r.touched_blocks += n
    if g == ref_group:
        reqs.hold(ev["req"], n)
    c._peak()


def _gather(c, events: list[tuple[int, dict]]):
    """The segment's block mentions as lists in stream order, or None when an event is not as
    the columns take it (the reference then reads it)."""
    lists: list[list] = []          # block lists: an event's blocks (a free's, then its freed)
    codes: list[int] = []
    evs: list[int] = []
    steps: list[int] = []
    hlists: list[list] = []         # the hashes of cache and evict lists, in the same order
    packed: list[tuple[int, int]] = []   # per hash list: (group, evict value or 0)
    kinds: list[int | None] = []
    ng = len(c.cached)
    index = c.reqs.index
    for i, (_, ev) in enumerate(events):
        code = _BLOCK.get(ev["kind"])
        kinds.append(code)
        if code is None:
            continue
        blocks = ev.get("blocks")
        g = ev.get("group")
        if type(blocks) is not list or type(g) is not int or not 0 <= g < ng or "req" not in ev:
            return None
        step = ev["step"]
        if type(step) is not int:
            return None
        lists.append(blocks)
        codes.append(code)
        evs.append(i)
        steps.append(step)
        if code == DEC:
            freed = ev.get("freed")
            if type(freed) is not list:
                return None
            lists.append(freed)
            codes.append(FRD)
            evs.append(i)
            steps.append(step)
        elif code != ALLOC:
            hashes = ev.get("hashes")
            if type(hashes) is not list or len(hashes) != len(blocks):
                return None
            if code == CACHE:
                hlists.append(hashes)
                packed.append((g, 0))
            elif code == EVICT:
                req = ev["req"]
                rid = _NO_RID if req is None else index.get(req)
                if rid is None:
                    return None
                hlists.append(hashes)
                packed.append((g, (step << 32) | rid))
    return lists, codes, evs, steps, hlists, packed, kinds
