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
"""

from __future__ import annotations

import queue
import threading
from typing import IO, Any

from kvcore.interrupts import deferred, start_without_signals

DEPTH = 4          # chunks in flight (`JsonlEvents` hands one over at `events.CHUNK` bytes)


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
