"""Every file kvcli writes goes through `open_output` (and is checked up front with
`check_output`): a regular file (or a new path) is written under a temporary name in its folder
and renamed when complete; a path that exists and is not a regular file (a device, a FIFO,
`/dev/stdout`), or `-`, is written in place, streaming; a symlink is followed to its target; a
`.gz` path is written gzip-compressed. A missing folder, a folder given as a file, a loop of
symlinks or a place that cannot be written is an `InputError` (one line, exit 2) before the work
starts; a write that fails during the work (a full disk) is `OutputFailed` (one line, exit 1),
no temporary file left.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from kvcli.output_checks import check_output, in_place
from kvcore.errors import InputError, path_label
from kvcore.interrupts import deferred


class OutputFailed(Exception):
    """Writing an output failed while the work ran (a full disk, a reader that left a FIFO):
    one line, exit code 1. `open_output` raises it for its files, `emit` for stdout."""

    def __init__(self, where: str, err: OSError) -> None:
        self.where = where
        self.errno = err.errno
        super().__init__(f"cannot write {where}: {err.strerror or err}")


STDOUT_LABEL = "stdout"
# A regular file's buffer: its chunks go to the writer thread (`output_thread.py`)
_BUFFER = 1 << 20


class _Raw(io.FileIO):
    """The file under an output's buffer: a failed write names the output (`OutputFailed`).
    Only the buffer's flushes come here (every 8 KiB or so), so the check costs nothing."""

    label = ""

    def write(self, b):
        try:
            return super().write(b)
        except OSError as err:
            raise OutputFailed(self.label, err) from None


class _StreamRaw(io.RawIOBase):
    """The same over an open binary stream (stdout, which the test runner may replace)."""

    def __init__(self, stream: IO[bytes], label: str) -> None:
        super().__init__()
        self.stream, self.label = stream, label

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        try:
            self.stream.write(b)
            return len(b)
        except BrokenPipeError:
            raise
        except OSError as err:
            raise OutputFailed(self.label, err) from None

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as err:
            raise OutputFailed(self.label, err) from None


# A temporary name is ".NAME." + mkstemp's 8 random characters + ".tmp"
_TEMP_EXTRA = len("..") + 8 + len(".tmp")


def _temp_prefix(target: str) -> str:
    """``.NAME.`` for the temporary file beside ``target``, NAME cut short (by characters, to
    the folder's name limit in bytes) so the whole temporary name fits where the final name
    does: a name of 242-255 bytes was refused, 'File name too long', after the work."""
    folder, name = os.path.split(target)
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    room = max(limit - _TEMP_EXTRA, 1)
    while len(os.fsencode(name)) > room:
        name = name[:-1]
    return f".{name}."


def _mode_for(target: str) -> int:
    """The mode the output gets: an existing regular file's permissions (a chmod 600 file
    stayed 600 no longer: the renamed temporary file made it 644), else what open() would give
    a new file (0666 less the umask; mkstemp makes its file 0600)."""
    try:
        st = os.stat(target)
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode) & 0o777
    except OSError:
        pass
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _temp_raw(fd: int, tmp: str, label: str) -> Any:
    """The raw file over a temporary file's ``fd``: written by a thread (`ThreadedRaw`) while
    fewer than `MAX_THREADS` are, else (or where no thread can start: a process limit) on the
    caller's thread, a small buffer's flushes at a time; the temporary file is removed if
    neither can be made."""
    from kvcli import output_thread  # (it imports OutputFailed)

    try:
        if output_thread.thread_free():
            try:
                return output_thread.ThreadedRaw(fd, label)
            except RuntimeError:     # "can't start new thread": written here instead
                pass
        return _Raw(fd, "w")
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise


# Names of the process's own descriptors: a rename would not reach what they point at (through
# /proc/self/fd it would replace the file the shell opened for the stream)
@contextlib.contextmanager
def open_output(path: str, *, field: str = "output", keep_on_interrupt: bool = False
                ) -> Iterator[IO[bytes]]:
    """The one way kvcli writes a file: yields a binary stream for ``path``.

    * ``-``: stdout (flushed at the end, never closed).
    * a regular file, or a new path: a temporary file in the same folder, renamed over the
      path when complete; on an error (or a Ctrl-C / SIGTERM / SIGHUP) it is removed, so a
      failed run never leaves a half-written file; with ``keep_on_interrupt`` an interrupt
      renames what was written so far (the writer has ended it with its `interrupted` record).
    * a path that exists and is not a regular file (a device, a FIFO, ``/dev/stdout``): opened
      and written in place, streaming; never replaced.
    * a symlink: followed; its target is written as above, the link stays a link.
    * a path ending in ``.gz``: written gzip-compressed.

    A path that cannot be written raises `InputError` before anything is opened (see
    `check_output`; commands call it before their work starts); a write that fails later
    (a full disk) raises `OutputFailed` (one line, exit 1).
    """
    check_output(path, field)
    gz = path.lower().endswith(".gz")     # (X.JSONL.GZ was written as plain text)
    if path == "-":
        sys.stdout.flush()
        buf: Any = io.BufferedWriter(_StreamRaw(sys.stdout.buffer, STDOUT_LABEL))
        tmp = target = None
    else:
        from kvcli.output_failures import flag

        label = f"{path_label(path)} ({flag(field)})"   # (a full disk names the option too)
        try:
            if in_place(path):
                tmp = target = None
                raw = _Raw(path, "w")
            else:
                target = os.path.realpath(path)
                folder = os.path.dirname(target)
                fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=".tmp",
                                           dir=folder)
                os.chmod(tmp, _mode_for(target))
                raw = _temp_raw(fd, tmp, label)
        except OSError as err:
            raise InputError(f"cannot write {path}: {err.strerror}", field=field) from None
        raw.label = label
        threaded = not isinstance(raw, _Raw)
        buf = io.BufferedWriter(raw, _BUFFER if threaded else io.DEFAULT_BUFFER_SIZE)
    f: Any = gzip.GzipFile(fileobj=buf, mode="wb", filename="", mtime=0) if gz else buf

    def close() -> None:
        try:
            if f is not buf:
                f.close()      # the gzip trailer
            if path == "-":
                buf.flush()
            else:
                buf.close()
        except OSError as err:   # a close that fails (ENOSPC on the last flush)
            raise OutputFailed(STDOUT_LABEL if path == "-" else label, err) from None

    def discard() -> None:
        with contextlib.suppress(Exception):
            close()
        with contextlib.suppress(Exception):
            buf.raw.close()
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def finish() -> None:
        with deferred():      # a signal now would cut the last flush or lose the rename
            try:
                close()
            except BaseException:
                discard()
                raise
            if tmp is not None:
                assert target is not None   # (set with tmp)
                os.replace(tmp, target)

    try:
        yield f
    except KeyboardInterrupt:
        if not keep_on_interrupt:
            discard()
            raise
        finish()          # what was written so far stays, ending with its interrupted record
        raise
    except BaseException:
        discard()
        raise
    finish()
