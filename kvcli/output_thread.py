"""`ThreadedRaw`: a file written by a background thread, for `open_output`'s regular files.

A replay with events writes a gigabyte; the kernel's copy of it into the page cache was 4-6% of
the replay's time on the main thread. `write` here queues the buffer's chunk and returns; a
thread makes the `os.write` calls, which release the GIL, so on a machine with a spare core the
writing overlaps the work (the first 3,000 conversation requests with events on this 2-core
machine: 6.79 -> 6.08 s, medians of 3 interleaved runs, with the 1 MiB buffer it gets). The
queue is bounded (`DEPTH` chunks of the buffer's size), so a slow disk slows the writer, never
fills memory. A failed write (a full disk) is kept and raised as `OutputFailed` by the next
`write`, `flush` or `close` on the main thread, where `open_output` handles it.
"""

from __future__ import annotations

import io
import os
import queue
import threading
from typing import Any

from kvcli.output_files import OutputFailed
from kvcore.interrupts import deferred, start_without_signals

DEPTH = 8                    # chunks in flight (of `open_output`'s buffer size: 1 MiB)
# Writer threads at once. Each holds up to DEPTH + 1 MiB of chunks and a thread's stack (8 MiB
# of address space): `kvcli cluster --replicas 1000 --events DIR` opened 2,000 of them and
# failed at the 280th, 'can't start new thread' under a 6 GB address-space limit (traceback,
# a temporary file left). A few threads give all the overlap a few cores can; the files past
# them are written on the caller's thread (`open_output`), the same bytes.
MAX_THREADS = 16
_running = 0                 # ThreadedRaw files open now (opened and closed on the main thread)
_FLUSH: Any = object()       # a flush marker: the thread acknowledges it through `done`
_END: Any = None             # the last item: the thread returns
_write = os.write            # (tests replace it to fill the disk)


def thread_free() -> bool:
    """Whether another file may get a writer thread (fewer than `MAX_THREADS` are open)."""
    return _running < MAX_THREADS


class ThreadedRaw(io.RawIOBase):
    """The raw file under an output's buffer: writes ``fd`` from a thread (closes it at the
    end). `flush` waits for every queued chunk; `close` also ends the thread."""

    def __init__(self, fd: int, label: str) -> None:
        super().__init__()
        self.fd, self.label = fd, label
        self.chunks: queue.Queue[Any] = queue.Queue(DEPTH)   # bytes, _FLUSH or _END
        self.done = threading.Semaphore(0)       # one release per flush marker handled
        self.error: OSError | None = None
        self.ended = False                       # the thread was told to end (by `close`)
        self.thread = threading.Thread(target=self._drain, name=f"write {label}", daemon=True)
        try:
            start_without_signals(self.thread)      # Ctrl-C goes to the main thread
        except RuntimeError:
            self.ended = True       # (so that closing this object leaves ``fd`` to its caller)
            raise
        global _running
        _running += 1

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def write(self, b) -> int:
        self._check()
        data = bytes(b)            # the buffer reuses its memory once this returns
        if data:
            self._put(data)
        return len(data)

    def _put(self, item: Any) -> None:
        """Queue ``item`` with signals held: a SIGHUP / Ctrl-C raised inside `Queue.put` left
        the queue's lock taken (the `with` had taken it, the handler's exception came before
        its cleanup), so the interrupted run's own close then waited on it for ever (a
        replay stopped by SIGHUP never exited: `test_hostile_outputs.py`, once in a loaded
        run). Held, it lands after the put; a full queue empties as the thread writes."""
        with deferred():
            self.chunks.put(item)

    def flush(self) -> None:
        if self.closed or self.ended:
            return
        self._put(_FLUSH)
        self.done.acquire()
        self._check()

    def lend_fd(self) -> int:
        """Write out what is queued and give the file descriptor to a writer that writes it
        directly from here on (the event lines' native pump: `kvcore/engine/line_thread.py`,
        which never takes the interpreter's lock); nothing else writes meanwhile."""
        self.flush()
        return self.fd

    def failed(self, err: OSError) -> OutputFailed:
        """A direct writer's failed write: kept as this file's (later calls raise it too), and
        the exception for that writer to raise."""
        self.error = self.error or err
        return OutputFailed(self.label, err)

    def close(self) -> None:
        if self.closed:
            return
        if not self.ended:
            global _running
            self.ended = True
            _running -= 1
            self._put(_END)
            self.thread.join()
            os.close(self.fd)
        super().close()       # (IOBase's close calls `flush`: nothing left to wait for)
        self._check()

    def _check(self) -> None:
        """Raise the thread's failure (again at every call: nothing after it is written)."""
        if self.error is not None:
            raise OutputFailed(self.label, self.error)

    def _drain(self) -> None:
        while True:
            data = self.chunks.get()
            if data is _END:
                return
            if data is _FLUSH:
                self.done.release()
                continue
            if self.error is not None:
                continue               # the first failure is kept; the rest is dropped
            try:
                view = memoryview(data)
                while view:
                    view = view[_write(self.fd, view):]
            except OSError as err:
                self.error = err
