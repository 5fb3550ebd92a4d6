"""`read_chunks`: the event stream read for `kvcli stats` a chunk of events at a time, the fast
path of `events_reader.read_stream` + the collector's handlers (which stay the reference: tests
compare the two, and this falls back on them).

A chunk (`CHUNK_EVENTS` events, ~60 admissions and ~150,000 block mentions on the conversation
trace) is done in columns: its block events by `chunk_blocks.BlockPass` (one sort by block in
place of a Python loop and a few numpy calls per event), its hashes and the admissions' lookups
by `chunk_hashes` (one sort by hash: each admission gets what the cached set, the eviction
history and the block keys held at its place in the stream). Then one pass over its events, in
order, does what depends on order and is cheap: ref-group blocks per request, the usage peak
and the step samples, the evictors, the hit counters, the request events, and each admission's
miss reasons from its looked-up arrays (`MissStats.attribute` with ``pre``).

What it skips, and why that is exact: the handlers' work per block and per lookup, replaced by
the same transitions and the same lookups done by sorting (see those modules); the state lives
in numpy (``bh``/``has``: the hash each block holds; per group a `U64Table` of hash -> blocks
holding it, for the reference's set and ``multi``; the history and block keys in
`history_table`), and the reference's ``bhash``, sets and ``multi`` are rebuilt only when the
reference runs. Nothing else: a chunk with anything the columns do not take as they are (a
field missing or of another type, a block id out of range, an evictor that never arrived, a
hash outside 0..2^64-1, an admission with a hash domain) or a transition the reference would
refuse or treat specially goes, untouched, through the per-event handlers (`_each`), which
raise the reader's error at the same line or do what they do. Streams with sliding-window
groups (hybrid models) take the reference throughout.

Measured on the conversation trace's 1 GB stream (benchmarks/stats_speed.py): docs/stats.md.
"""

from __future__ import annotations

import numpy as np
import orjson

from kvcore.analysis.events_reader import EVENT_ERRORS, event_error
from kvcore.analysis.stats.chunk_blocks import ALLOC, CACHE, DEC, EVICT, TOUCH
from kvcore.analysis.stats.chunk_columns import ADMIT, columns
from kvcore.analysis.stats.history_table import TableBlockKeys, TableHistory
from kvcore.analysis.stats.u64_table import U64Table
from kvcore.errors import InputError

CHUNK_EVENTS = 1 << 13
_END = frozenset(("end", "interrupted"))


def read_chunks(name: str, lines, c) -> str:
    """`read_stream(name, lines, c)` for a `StatsCollector`, a chunk at a time (the module
    docstring); the same result and the same errors. Returns the last kind."""
    ch = Chunks(name, c)
    handlers = c.handlers
    loads = orjson.loads
    lineno = 1
    seq = 0
    last = None
    ev = None
    read_step: object = object()     # the reader's own previous step, as read_stream's
    events = ch.events
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
            if kind not in handlers:
                raise InputError(f"unknown event kind {kind!r}", path=name, line=lineno,
                                 field="kind")
            events.append((lineno, ev))
            if kind in _END:
                ch.flush()
                last = kind
            elif len(events) >= CHUNK_EVENTS:
                ch.flush()
                events = ch.events
    except EVENT_ERRORS as err:
        ch.flush()                  # an earlier line's error comes first, as it would have
        raise event_error(err, name, lineno, ev) from None
    ch.flush()
    if last is None:
        raise InputError("truncated stream: ends without an 'end' (or 'interrupted') line",
                         path=name, line=lineno)
    return last


class Chunks:
    """The pending chunk, and the numpy state the columns use."""

    def __init__(self, name: str, c) -> None:
        self.name = name
        self.c = c
        self.events: list[tuple[int, dict]] = []
        self.cur_step: object = object()     # the last event's step (advance when it changes)
        # hand-built hashes that are no uint64, or a hybrid model: the reference throughout
        self.fast = not c.swa_groups and self._from_reference()
        self.stale = False                   # the reference's state behind the numpy one
        c.evicted[:] = [TableHistory() for _ in c.evicted]     # (empty: no event yet)
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
        if self.stale:
            self._to_reference()
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
            self.fast = self._from_reference()

    def _to_reference(self) -> None:
        """``bhash``, the sets and ``multi`` from the numpy state."""
        c = self.c
        bh = c.bh.tolist()
        for i in np.flatnonzero(~c.has).tolist():
            bh[i] = None
        c.bhash = bh
        for g, held in enumerate(self.held):
            live = held.vals > 0
            keys, n = held.keys[live].tolist(), held.vals[live].tolist()
            if held._zero > 0:
                keys.append(0)
                n.append(held._zero)
            c.cached[g] = set(keys)
            c.multi[g] = {h: k - 1 for h, k in zip(keys, n) if k > 1}
        c.miss.cached = c.cached
        self.stale = False

    def _from_reference(self) -> bool:
        """The numpy state from ``bhash``, the sets and ``multi``; False when a block or a set
        holds something that is no uint64 int (a hand-built stream: the reference does the
        rest), or the history does."""
        c = self.c
        held = c.bhash
        if not set(map(type, held)) <= {int, type(None)}:
            return False
        try:
            c.bh = np.array([0 if h is None else h for h in held], dtype=np.uint64)
            tables = []
            for s, multi in zip(c.cached, c.multi):
                t = U64Table()
                keys = list(s)
                if keys:
                    t.put(np.array(keys, dtype=np.uint64),
                          np.array([1 + multi.get(h, 0) for h in keys], dtype=np.int64))
                tables.append(t)
        except (OverflowError, TypeError, ValueError):
            return False
        c.has = np.fromiter((h is not None for h in held), dtype=bool, count=len(held))
        self.held = tables
        return not any(getattr(e, "_all", False) for e in (*c.evicted, c.miss.seen))

    # -- the fast path ----------------------------------------------------------------------
    def _columns(self, events: list[tuple[int, dict]]) -> bool:
        """The chunk in columns (module docstring); False, with nothing changed, when it
        needs the reference."""
        c = self.c
        try:
            got = columns(c, self.held, events)
        except Exception:       # noqa: BLE001 - whatever it is, the reference reports it
            return False
        if got is None:
            return False
        got.commit(c, self.held)
        self.stale = True
        self._light(events, got)
        return True

    def _light(self, events, got) -> None:
        """The chunk's events in order: what depends on order and is cheap."""
        c = self.c
        ref_group = c.ref_group
        reqs = c.reqs
        r = c.reuse
        e = c.ev
        miss = c.miss
        handlers = c.handlers
        kinds, pre = got.kinds, got.pre
        fresh, idle, held = got.fresh, got.idle, got.held
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
                elif k == ADMIT:
                    c._admit(ev, pre.get(i, ()))
                elif k == ALLOC:
                    n = len(ev["blocks"])
                    c.used += n
                    if ev["group"] == ref_group:
                        reqs.hold(ev["req"], n)
                    c._peak()
                elif k == EVICT:
                    n = len(ev["blocks"])
                    c.cached_free -= idle[i]
                    e.evictions += n
                    e.by_req[c._evictor(ev["req"])] += n
                    c.step_evictions += n
                elif k == DEC:
                    c.used -= len(ev["freed"])
                    c.cached_free += held[i]
                    if ev["group"] == ref_group:
                        reqs.release(ev["req"], len(ev["blocks"]))
                elif k == CACHE:
                    if miss.maybe_in_flight and ev["group"] == ref_group:
                        miss.on_cached(ev["hashes"], c.step, ev["req"])
                elif k == TOUCH:
                    _touch(c, ev, fresh[i], r, reqs, ref_group)
        except EVENT_ERRORS as err:
            raise event_error(err, self.name, lineno, ev) from None


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
