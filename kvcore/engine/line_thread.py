"""`LineThread`: our event lines formatted and written on a second thread.

A replay with events writes a gigabyte of lines; their digits (block ids, 64-bit hashes) were
about a third of a conversation replay's time (12.0 s with events against 8.2 s without, both
compiled). With a line thread the replay's thread only appends compact binary records
(`native_pipe.Records`: the values copied, no text) and hands them over a megabyte at a time;
this thread turns them into the same text without the interpreter's lock
(`native_pipe.Formatter`) and writes it, on the other core.

Only on the compiled build (the formatter is native) and only for `JsonlEvents`' own lines
(`JsonlEvents(out, line_thread=True)`); the text is the same bytes either way (tests compare).
The queue is bounded (`DEPTH` chunks), so a slow disk slows the replay, never fills memory. A
write that fails on this thread (a full disk: `OutputFailed`) is raised on the replay's thread
by the next hand-over or by `close`; nothing after it is written.

Two ways to run it: where the output is kvcli's regular file (its raw writer lends its file
descriptor: `lend_fd`), `PumpLines` hands chunks to the native `Pump`, whose thread formats and
writes them without ever taking the interpreter's lock; anywhere else (a gzip stream, stdout,
a test's buffer) `LineThread` queues them in Python and writes through `out`. `line_thread`
picks. The conversation trace with events: see docs/replay-speed.md ("The line thread").
"""

from __future__ import annotations

import os
import queue
import threading
from typing import IO, Any

from kvcore.interrupts import deferred, start_without_signals

DEPTH = 4          # chunks in flight (`JsonlEvents` hands one over at `events.CHUNK` bytes)
PUMP_DEPTH = 8     # the pump's (it is woken once half of them are queued)


def line_thread(out: IO[bytes], native: Any) -> LineThread | PumpLines:
    """The line thread for ``out``: `PumpLines` where its raw file lends its descriptor."""
    raw = getattr(out, "raw", None)
    if raw is not None and hasattr(raw, "lend_fd") and hasattr(out, "flush"):
        return PumpLines(out, raw, native)
    return LineThread(out, native)


class _Abandoned(Exception):
    """Marks an abandoned stream: the thread writes nothing more."""


class LineThread:
    """The records of one event stream (`records`, appended to by `JsonlEvents`) and the
    thread that writes their text to ``out``. `close` writes what is left and ends it."""

    def __init__(self, out: IO[bytes], native: Any) -> None:
        self.out = out
        self.records = native.Records()
        self.formatter = native.Formatter()
        self.chunks: queue.Queue[bytes | None] = queue.Queue(DEPTH)
        self.error: BaseException | None = None
        self.closed = False
        self.thread = threading.Thread(target=self._drain, name="event lines", daemon=True)
        start_without_signals(self.thread)    # a Ctrl-C always reaches the replay's thread

    def submit(self) -> None:
        """Hand the records so far to the thread (not while lines are held for an `admit`)."""
        records = self.records
        if records.holding or not len(records):
            return
        self._check()
        # Held signals: a chunk taken from the buffer is always queued, never lost to a
        # Ctrl-C while the queue is full (the interrupted run's lines stay whole).
        with deferred():
            self.chunks.put(records.take())

    def close(self) -> None:
        """Write every record and end the thread (again: nothing)."""
        if self.closed:
            return
        self.submit()
        self._end()
        self._check()

    def abandon(self) -> None:
        """End the thread without writing what is left (the output is being discarded)."""
        if not self.closed:
            self.error = self.error or _Abandoned()   # the thread drops what is queued
            self._end()

    def _end(self) -> None:
        self.closed = True
        self.chunks.put(None)
        self.thread.join()

    def _check(self) -> None:
        if self.error is not None:
            raise self.error

    def _drain(self) -> None:
        while True:
            chunk = self.chunks.get()
            if chunk is None:
                return
            if self.error is not None:
                continue            # the first failure is kept; the rest is dropped
            try:
                self.out.write(self.formatter.format(chunk))
            # Anything: raised again on the replay's thread. The thread must outlive any
            # failure, or the replay would wait forever on a full queue.
            except BaseException as err:  # noqa: BLE001
                self.error = err


class PumpLines:
    """`LineThread`'s contract for an output whose raw file lends its descriptor (`lend_fd`:
    what it queued is written first; a failed write of ours goes back through its `failed`,
    which gives the exception to raise). The pump starts at the first hand-over, after the
    header that `JsonlEvents` wrote through ``out``."""

    def __init__(self, out: IO[bytes], raw: Any, native: Any) -> None:
        self.out, self.raw, self.native = out, raw, native
        self.records = native.Records()
        self.formatter = native.Formatter()
        self.pump: Any = None
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.closed = False

    def submit(self) -> None:
        """Hand the records so far to the pump (not while lines are held for an `admit`)."""
        records = self.records
        if records.holding or not len(records):
            return
        self._check()
        if self.pump is None:
            self._start()
        if not self.pump.put(records.take()):
            self._check()

    def close(self) -> None:
        """Write every record and end the pump (again: nothing)."""
        if self.closed:
            return
        self.submit()
        self._end(drop=False)
        self._check()

    def abandon(self) -> None:
        """End the pump without writing what is left (the output is being discarded)."""
        if not self.closed:
            self._end(drop=True)

    def _start(self) -> None:
        self.out.flush()
        self.pump = self.native.Pump(self.formatter, self.raw.lend_fd(), PUMP_DEPTH)
        self.thread = threading.Thread(target=self.pump.run, name="event lines", daemon=True)
        start_without_signals(self.thread)

    def _end(self, drop: bool) -> None:
        self.closed = True
        if self.pump is not None and self.thread is not None:
            self.pump.close(drop)
            self.thread.join()

    def _check(self) -> None:
        if self.error is None and self.pump is not None:
            err, bad = self.pump.failure()
            if err:
                self.error = self.raw.failed(OSError(err, os.strerror(err)))
            elif bad:
                self.error = (MemoryError() if bad == -1
                              else ValueError("a malformed chunk of event records"))
        if self.error is not None:
            raise self.error
