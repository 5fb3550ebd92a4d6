"""SIGTERM and SIGHUP end a command as Ctrl-C does, with the shell's exit code (128 + n)."""

from __future__ import annotations

import contextlib
import signal
from typing import Any

_SIGNALLED: list[int] = []


def _on_signal(signum: int, _frame: Any) -> None:
    _SIGNALLED.append(signum)
    raise KeyboardInterrupt


def install_signal_handlers() -> None:
    """SIGTERM and SIGHUP stop a command as Ctrl-C does (the KeyboardInterrupt path: outputs
    end with their `interrupted` record, temporary files are removed); the exit code then
    says which signal it was (`interrupt_code`)."""
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None:
            with contextlib.suppress(ValueError, OSError):   # not the main thread
                signal.signal(sig, _on_signal)


def interrupt_code() -> int:
    """The exit code of an interrupted command: 128 + the signal (130 Ctrl-C, 143 SIGTERM,
    129 SIGHUP)."""
    return 128 + (_SIGNALLED[-1] if _SIGNALLED else int(signal.SIGINT))
