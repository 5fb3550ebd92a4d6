"""`open_append`: a file kvcli adds whole lines to as work finishes (`kvcli sweep`'s results),
never replaced; `check_append` refuses, before the work, what it could not append to. The
writing of whole files is `output_files.py`'s."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator

from kvcli.output_checks import check_output
from kvcli.output_files import OutputFailed
from kvcore.errors import InputError
from kvcore.interrupts import deferred


class Appender:
    """What `open_append` yields: `line(data)` appends one whole line (one `write` call on an
    `O_APPEND` descriptor, then fsync), so a crash leaves every earlier line whole."""

    def __init__(self, fd: int, label: str) -> None:
        self.fd, self.label = fd, label

    def line(self, data: bytes) -> None:
        data = data if data.endswith(b"\n") else data + b"\n"
        try:
            with deferred():        # a Ctrl-C never cuts a line in two
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view):]
                with contextlib.suppress(OSError):  # a FIFO or a device: nothing to sync
                    os.fsync(self.fd)
        except OSError as err:
            raise OutputFailed(self.label, err) from None


def check_append(path: str, field: str) -> None:
    """`check_output` for a file `open_append` will append to (not ``-``, not ``.gz``)."""
    if path == "-" or path.lower().endswith(".gz"):
        raise InputError("a plain file that lines are appended to (not - or .gz)", field=field)
    check_output(path, field)


@contextlib.contextmanager
def open_append(path: str, *, field: str = "output") -> Iterator[Appender]:
    """A file kvcli adds lines to as work finishes (`kvcli sweep`'s results): opened for
    appending (created when missing), never replaced, each line written whole and synced. A
    last line cut short by a crash (no newline) is cut off first. ``-`` and ``.gz`` are
    refused (`InputError`), as is anything `check_output` refuses."""
    check_append(path, field)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    except OSError as err:
        raise InputError(f"cannot write {path}: {err.strerror}", field=field) from None
    try:
        _cut_partial_tail(fd, path)
        yield Appender(fd, path)
    finally:
        os.close(fd)


def _cut_partial_tail(fd: int, label: str) -> None:
    """Truncate a regular file after its last newline (a line a crash cut short)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
        return
    with open(label, "rb") as f:
        size = st.st_size
        pos = size
        while pos > 0:
            step = min(65536, pos)
            f.seek(pos - step)
            chunk = f.read(step)
            at = chunk.rfind(b"\n")
            if at >= 0:
                pos = pos - step + at + 1
                break
            pos -= step
    if pos != size:
        try:
            os.truncate(fd, pos)
        except OSError as err:
            raise OutputFailed(label, err) from None
