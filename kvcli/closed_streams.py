"""Stand-ins for standard streams the shell closed (`kvcli replay t.jsonl >&-`, `<&-`, `2>&-`).

Python sets ``sys.stdout`` (or stdin, stderr) to None when its descriptor is closed at start-up,
and every command met that as an AttributeError's traceback. `stand_in()` puts a stream there
that fails as the closed descriptor would (EBADF), so the paths that already handle a stream
that cannot be read or written say so in one line: ``error: cannot write stdout: standard
output is closed``, exit 1; ``error: <stdin>: cannot read: [Errno 9] standard input is closed``,
exit 2. A closed stderr takes /dev/null: the messages have nowhere to go, and
``print(file=None)`` would have put them on stdout, among the data.
"""

from __future__ import annotations

import errno
import io
import os
import sys


class _Closed(io.RawIOBase):
    """A raw stream whose every read, write and `fileno` fails with EBADF."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self._what = what
        self.silenced = False   # once the failure is said: writes vanish (the final flushes)

    def _fail(self) -> OSError:
        return OSError(errno.EBADF, f"standard {self._what} is closed")

    def readable(self) -> bool:
        return self._what == "input"

    def writable(self) -> bool:
        return self._what == "output"

    def readinto(self, buffer) -> int:
        raise self._fail()

    def write(self, data) -> int:
        if self.silenced:
            return len(data)
        raise self._fail()

    def fileno(self) -> int:
        raise self._fail()


def stand_in() -> None:
    """Give each closed standard stream its stand-in (see the module doc); a no-op otherwise."""
    if sys.stdin is None:
        sys.stdin = io.TextIOWrapper(io.BufferedReader(_Closed("input")), encoding="utf-8")
    if sys.stdout is None:
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(_Closed("output")), encoding="utf-8")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (the process's)


def silence(stream: object) -> bool:
    """Make a closed stream's stand-in swallow what is still written (the interpreter's last
    flush would fail again, a second message); False when ``stream`` is no stand-in."""
    raw = getattr(getattr(stream, "buffer", None), "raw", None)
    if isinstance(raw, _Closed):
        raw.silenced = True
        return True
    return False
