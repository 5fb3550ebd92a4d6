"""`deferred()`: hold Ctrl-C, SIGTERM and SIGHUP while a few lines that must not be cut run (an
output's last records, its rename), and deliver the signal when they are done.

Without it a signal in the last moment of a run cuts a file mid-record: the replay's end line,
the request lines, a gzip trailer, or the rename of a complete temporary file. The work held is
bounded (the last writes of a run), so a held Ctrl-C is seen a moment later, never lost.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

_HELD = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))
_depth: list[int] = []      # non-empty while a block is held (an inner one leaves it to it)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Run the block with the signals held; one that came meanwhile is raised again at the end,
    to the handler that was in place (kvcli's ends the command; a default one ends the
    process, as it would have). Outside the main thread (where Python delivers signals
    anyway) or nested, it does nothing."""
    if threading.current_thread() is not threading.main_thread() or _depth:
        yield
        return
    got: list[int] = []
    before = {sig: signal.signal(sig, lambda signum, _frame: got.append(signum))
              for sig in _HELD}
    _depth.append(1)
    try:
        yield
    finally:
        _depth.pop()
        for sig, handler in before.items():
            signal.signal(sig, handler)
        if got:
            signal.raise_signal(got[0])


def start_without_signals(thread: threading.Thread) -> None:
    """Start a helper thread with every signal blocked (a thread inherits the mask it is started
    under), so that the kernel delivers Ctrl-C, SIGTERM and SIGHUP to the main thread. One that
    landed on the helper would reach the main thread's check late (3.11 flags a signal for the
    main thread only when that thread next takes the GIL), possibly after `deferred()` ended."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        thread.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
