"""Event sinks: where a replay's record goes, streamed line by line (never held in memory).

Two formats (documented in docs/events.md):

* `JsonlEvents` (ours, schema_version 1): a `header` line, then one line per block operation per
  group (`allocate`, `touch`, `cache`, `evict`, `free`) and per request event (`arrive`, `admit`,
  `preempt`, `finish`, `reject`), each with `seq`, `step`, `t_ms`, `kind`, `req`, `group`; the
  stream ends with `end` (the summary) or, after Ctrl-C, `interrupted`.
* `VllmEvents` (`vllm_events.py`: interpreted, the live and cluster sinks subclass it): vLLM's
  own KV event batches, `{"ts", "events": [BlockStored | BlockRemoved |
  AllBlocksCleared, ...], "data_parallel_rank": null}`, one line per engine step that published
  events, exactly what vLLM's `KVEventBatch` carries (the stream KV-aware routers index).

`Recorder` (`recorder.py`) writes our stream from the stack's block operations.
"""

from __future__ import annotations

import io
from typing import IO, Any, Final

import orjson

from kvcore.engine.hash_json import hashes_json

_dumps = orjson.dumps
_NUMPY = orjson.OPT_SERIALIZE_NUMPY     # `hash_array`'s arrays are written as JSON lists of ints
# orjson adds the "\n": no copy of a long line to add it
_LINE = orjson.OPT_APPEND_NEWLINE | _NUMPY
# With a line thread: records handed over at this size (a megabyte of records is about 2.5 of
# text; `line_thread.DEPTH` chunks in flight)
CHUNK: Final = 1 << 20


# The block lines' kinds, as `JsonlEvents.lists_line` takes them (`native_pipe.KINDS`)
ALLOCATE: Final = 0
TOUCH: Final = 1
CACHE: Final = 2
EVICT: Final = 3
FREE: Final = 4
KINDS = (b"allocate", b"touch", b"cache", b"evict", b"free")


class JsonlEvents:
    """Our event stream. The replay sets `step` and `t_ms` as the clock moves."""

    format = "jsonl"
    # Whether a person reads the block hashes this sink gets (a stream written out does; an
    # in-process consumer, `CallbackEvents`, shows none): the hash options' warnings ask it.
    shows_hashes = True

    def __init__(self, out: IO[bytes], *, line_thread: bool = False, chunk: int = CHUNK
                 ) -> None:
        """``line_thread``: format and write the lines on a second thread where the compiled
        build can (`line_thread.py`), handing records over ``chunk`` bytes at a time; then
        `end`, `interrupted` or `close` must end it."""
        self.out = out
        # Whether this class's own `emit` writes the lines (not a subclass's): then block lines
        # may come as text (`block_line`) and events may carry numpy arrays (`writes_arrays`).
        self._direct = type(self) is JsonlEvents
        self._pipe: Any = None
        self._native: Any = None        # native_pipe, with a line thread
        if line_thread and self._direct:
            from kvcore import compiled
            native = compiled.native("kvcore.engine.native_pipe")
            if native is not None:
                from kvcore.engine import line_thread as lines
                self._pipe = lines.line_thread(out, native)
                self._native = native
        self._records: Any = None if self._pipe is None else self._pipe.records
        self._chunk = max(chunk, 1)
        self.seq = 0
        self._step = 0
        self._t = 0.0
        self._held: list[tuple] | None = None
        # The block lines' pieces, kept while they stay the same: the step and time (made
        # again after the clock or the step is set: a flag, not a tuple compared per line),
        # the request
        self._head_stale = True
        self._head = b""
        self._req_key: str | None = None
        self._req_json = b"null"

    @property
    def step(self) -> int:
        return self._step

    @step.setter
    def step(self, value: int) -> None:
        self._step = value
        self._head_stale = True

    @property
    def t_ms(self) -> float:
        return self._t

    @t_ms.setter
    def t_ms(self, value: float) -> None:
        self._t = round(value, 6)
        self._head_stale = True

    def _new_head(self) -> bytes:
        self._head_stale = False
        self._head = b',"step":%d,"t_ms":%s' % (self._step, _dumps(self._t))
        return self._head

    def writes_arrays(self) -> bool:
        """Whether events may carry `hash_array`'s numpy arrays: only when this class's own
        `emit` writes them (a subclass that consumes event dicts gets plain lists)."""
        return self._direct

    def pieces(self) -> Any:
        """Where the line thread writes the digits of an `admit` line's lists (`release`'s
        ``parts``): `native_pipe`, whose `segment_mark(k)` marks list k in a line; else None."""
        return self._native

    def header(self, fields: dict) -> None:
        obj = {"kind": "header", "schema_version": 1, **fields}
        if self._pipe is not None and not len(self._records) and not self.seq:
            # The first line, written here and now (the line thread has nothing yet): an
            # output that cannot be written (a full device) fails before the replay, as
            # without the thread, not after it.
            self.out.write(_dumps(obj, option=_LINE))
            if isinstance(self.out, io.BufferedWriter):    # (a gzip stream is not flushed)
                self.out.flush()
            return
        self.emit(obj)

    def write(self, kind: str, req: str | None, group: int | None = None, **fields: Any) -> None:
        self.put(kind, req, group, fields)

    def put(self, kind: str, req: str | None, group: int | None, fields: dict) -> None:
        """`write` without keyword packing (the hot path)."""
        if self._held is not None:
            self._held.append((kind, req, group, fields))
            return
        if self._pipe is not None:   # numbered on the line thread
            self._pipe_raw(self._unnumbered(kind, req, group, fields), True)
            self.seq += 1
            return
        obj = {"seq": self.seq, "step": self._step, "t_ms": self._t, "kind": kind, "req": req,
               "group": group}
        obj.update(fields)
        self.emit(obj)
        self.seq += 1

    def _unnumbered(self, kind: str, req: str | None, group: int | None, fields: dict
                    ) -> bytes:
        obj = {"step": self._step, "t_ms": self._t, "kind": kind, "req": req, "group": group}
        obj.update(fields)
        return _dumps(obj, option=_LINE)

    def _pipe_raw(self, line: bytes, numbered: bool) -> None:
        if self._records.raw(line, numbered) >= self._chunk:
            self._pipe.submit()

    def emit(self, obj: dict) -> None:
        """Write one event object (override to consume events in-process)."""
        if self._pipe is not None:
            self._pipe_raw(_dumps(obj, option=_LINE), False)
            return
        self.out.write(_dumps(obj, option=_LINE))

    def evict(self, req: str | None, group: int, block_ids: list[int], hashes: Any
              ) -> None:
        """One `evict` line for the blocks one allocation evicted in one group."""
        self.put("evict", req, group, {"blocks": block_ids, "hashes": hashes})

    def lists_line(self, kind: int, req: str | None, group: int, a: list[int],
                   b: list | None = None, c: list[int] | None = None) -> None:
        """A block operation's line from its lists (``kind``: `ALLOCATE` blocks; `TOUCH`,
        `CACHE`, `EVICT` blocks and their raw hashes; `FREE` blocks, freed, evictable); only
        where `writes_arrays()`. With a line thread only the values are copied here."""
        pipe = self._pipe
        if pipe is None:
            if kind == ALLOCATE:
                body = b',"blocks":' + _dumps(a)
            elif kind == FREE:
                body = b',"blocks":%s,"freed":%s,"evictable":%s' % (_dumps(a), _dumps(b),
                                                                   _dumps(c))
            else:
                assert b is not None
                body = b',"blocks":%s,"hashes":%s' % (_dumps(a), hashes_json(b))
            self.block_line(KINDS[kind], req, group, body)
            return
        records = self._records
        if self._head_stale:
            records.head(self._new_head())
        if req != self._req_key:
            self._req_key = req
            self._req_json = _dumps(req)
            records.req(self._req_json)
        if records.lists(kind, group, a, b, c) >= self._chunk:
            pipe.submit()
        self.seq += 1

    def block_line(self, kind: bytes, req: str | None, group: int, body: bytes) -> None:
        """A block operation's line, its fields after `group` given as JSON text (``body``:
        ``,"blocks":[...]...``); only where `writes_arrays()` (this class's own lines). Block
        lines are most of a long replay's lines: formatted directly, not as a dict for orjson,
        the same bytes (orjson still encodes the float and the strings). Held like `put`'s."""
        if self._held is not None:
            self._held.append((kind, req, group, body))
            return
        if self._head_stale:
            self._new_head()
        if req != self._req_key:
            self._req_key = req
            self._req_json = _dumps(req)
        self.out.write(b'{"seq":%d%s,"kind":"%s","req":%s,"group":%d%s}\n'
                       % (self.seq, self._head, kind, self._req_json, group, body))
        self.seq += 1

    # An admission attempt's block events are held until we know whether it was admitted, so the
    # `admit` line precedes them (consumers see the cache as the lookup saw it).
    def hold(self) -> None:
        if self._pipe is not None:
            self._pipe.records.hold()
            return
        self._held = []

    def release(self, first: tuple | None = None, parts: list | None = None) -> None:
        """End a hold; ``first`` (a `put`'s arguments) goes before the lines held. ``parts``:
        the lists its marks stand for (`pieces`; only with the line thread)."""
        pipe = self._pipe
        if pipe is not None:
            # the first line goes before the held ones, and the line thread numbers them all
            pipe.records.release(None if first is None else self._unnumbered(*first), parts)
            if first is not None:
                self.seq += 1
            if len(pipe.records) >= self._chunk:
                pipe.submit()
            return
        held, self._held = self._held or [], None
        if first is not None:
            self.put(*first)
        for item in held:
            if isinstance(item[3], bytes):
                self.block_line(*item)
            else:
                self.put(*item)

    def end(self, summary: dict) -> None:
        self.write("end", None, summary=summary)
        self.close()

    def interrupted(self) -> None:
        if self._held is not None or (self._pipe is not None and self._pipe.records.holding):
            self.release()
        self.write("interrupted", None)
        self.close()

    def close(self) -> None:
        """Write every line still with the line thread and end it (without one: nothing)."""
        if self._pipe is not None:
            self._pipe.close()

    def abandon(self) -> None:
        """End the line thread without writing (a replay that failed: its output is dropped)."""
        if self._pipe is not None:
            self._pipe.abandon()


class CallbackEvents(JsonlEvents):
    """Our event stream handed to a function, one dict per event (in-process consumers)."""

    def __init__(self, fn: Any, *, shows_hashes: bool = True) -> None:
        """`shows_hashes`: whether the consumer shows block hashes (`kvcli stats` lists the
        hot prefixes' hashes; a request's story shows none)."""
        super().__init__(None)  # type: ignore[arg-type]
        self.fn = fn
        self.shows_hashes = shows_hashes

    def emit(self, obj: dict) -> None:
        self.fn(obj)
