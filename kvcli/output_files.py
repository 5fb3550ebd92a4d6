"""Every file kvcli writes goes through `open_output` (and is checked up front with
`check_output`): a regular file (or a new path) is written under a temporary name in its folder
and renamed when complete; a path that exists and is not a regular file (a device, a FIFO,
`/dev/stdout`), or `-`, is written in place, streaming; a symlink is followed to its target; a
`.gz` path is written gzip-compressed. A missing folder, a folder given as a file or a place that
cannot be written is an `InputError` (one line, exit 2) before the work starts; a write that
fails during the work (a full disk) is `OutputFailed` (one line, exit 1), no temporary file left.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from typing import IO, Any

from kvcore.errors import InputError
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

    def write(self, b):  # type: ignore[override]
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

    def write(self, b) -> int:  # type: ignore[override]
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


# Names of the process's own descriptors: a rename would not reach what they point at (through
# /proc/self/fd it would replace the file the shell opened for the stream)
_DESCRIPTORS = ("/dev/stdin", "/dev/stdout", "/dev/stderr")
_DESCRIPTOR_DIRS = ("/dev/fd/", "/proc/")


def _in_place(path: str) -> bool:
    """True when ``path`` is written where it stands (never replaced): it exists and is not a
    regular file (a device, a FIFO, a socket), or it names a descriptor (``/dev/stdout``,
    ``/dev/fd/N``, ``/proc/...``). A regular file elsewhere under /dev (``/dev/shm/x``, on a
    tmpfs) is a file like any other: written under a temporary name and renamed."""
    a = os.path.abspath(path)
    if a in _DESCRIPTORS or a.startswith(_DESCRIPTOR_DIRS):
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def check_output(path: str | None, field: str, *, folder: bool = False) -> None:
    """Refuse, before any work, an output that cannot be written: its folder missing, a folder
    given as a file (or a file as a folder with ``folder``), a place without write permission.
    Raises `InputError` (one line, exit 2). ``-`` and None pass."""
    if path is None or path == "-":
        return
    if not path:
        raise InputError("an empty path", field=field)
    if folder and os.path.exists(path) and not os.path.isdir(path):
        # (a device passed as in place: /dev/null ran the whole job, then 'cannot create')
        raise InputError(f"{path} is a file, not a folder", field=field)
    if _in_place(path) and not (folder and os.path.isdir(path)):
        if os.path.isdir(path):
            raise InputError(f"{path} is a folder, not a file", field=field)
        if os.path.exists(path) and not os.access(path, os.W_OK):
            raise InputError(f"cannot write {path}: permission denied", field=field)
        return
    target = os.path.realpath(path)   # a symlink: its target is written, the link stays
    if folder:
        if os.path.exists(target):
            if not os.path.isdir(target):
                raise InputError(f"{path} is a file, not a folder", field=field)
            if not os.access(target, os.W_OK | os.X_OK):
                raise InputError(f"cannot write in {path}: permission denied", field=field)
            return
        top = target           # created with its parents: the nearest existing one decides
        while not os.path.exists(top):
            top = os.path.dirname(top)
        if not os.path.isdir(top):
            raise InputError(f"cannot create {path}: {top} is a file", field=field)
        if not os.access(top, os.W_OK | os.X_OK):
            raise InputError(f"cannot create {path}: {top} is not writable (permission "
                             "denied)", field=field)
        return
    if os.path.isdir(target) or path.endswith(os.sep):
        raise InputError(f"{path} is a folder, not a file", field=field)
    parent = os.path.dirname(target)
    shown = parent if os.path.islink(path) else (os.path.dirname(path) or ".")
    if not os.path.isdir(parent):
        what = "is not a folder" if os.path.exists(parent) else "does not exist"
        raise InputError(f"cannot write {path}: the folder {shown} {what}", field=field)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"cannot write {path}: the folder {shown} is not writable "
                         "(permission denied)", field=field)


def check_distinct(inputs: list[tuple[str, str | None]],
                   outputs: list[tuple[str, str | None]],
                   folders: Iterable[tuple[str, str | None]] = ()) -> None:
    """Refuse, before any work, an output file that is one of the run's inputs or another of
    its outputs, by whatever name (a symlink, a relative path, a hard link): renamed over the
    input at the end, it destroyed the trace the run had read (`--events TRACE` exited 0 with
    the trace gone); two outputs on one file kept only the one renamed last. ``inputs`` and
    ``outputs`` are (what to call it, path) pairs: an input's name as a message says it ("the
    trace"), an output's its field. ``-`` (stdout) and None pass, as do outputs written in place (a
    device, a FIFO: ``--events /dev/null --steps /dev/null`` is fine). Raises `InputError`
    naming the output's field. ``folders``: outputs written into a folder (made if missing),
    which no file output may name or lie above (`--events X --decisions X` ended in an
    IsADirectoryError traceback; `--plot X --results X` failed after the work)."""
    from kvcli.output import flag

    for name, folder in folders:
        where = os.path.realpath(folder) if folder else ""
        for other, path in outputs:
            file = os.path.realpath(path) if path and path != "-" else None
            if file == where:
                raise InputError(f"{folder} is also {flag(other)}'s output, a file: it cannot "
                                 "be a folder too", field=name)
            if file and where.startswith(file + os.sep):
                raise InputError(f"{folder} lies under {flag(other)}'s output file {path}: "
                                 "that cannot be a folder too", field=name)

    seen: list[tuple[tuple, str, bool]] = []     # (the file's key, its name, an input)
    for is_input, pairs in ((True, inputs), (False, outputs)):
        for name, path in pairs:
            if path is None or (path == "-" and not is_input) or (
                    not is_input and _in_place(path)):
                continue
            key = _file_key(path, is_input)
            if key is None:
                continue
            for other_key, other, other_input in seen:
                if key != other_key:
                    continue
                if other_input:
                    raise InputError(f"{path} is {other}, which this run reads: writing it would "
                                     "replace it", field=name)
                raise InputError(f"{path} is also {flag(other)}'s output: one would replace "
                                 "the other", field=name)
            seen.append((key, name, is_input))


def _file_key(path: str, is_input: bool) -> tuple | None:
    """What names one file however it is spelled: its device and inode where it exists, else
    (an output still to be made) its real path; None for an input that is missing (its reader
    says so) or not a regular file (a FIFO, a device: nothing to replace)."""
    try:
        # (``-``: stdin, which a shell may have opened on the very file an output names)
        st = os.fstat(sys.stdin.fileno()) if path == "-" else os.stat(path)
    except (OSError, ValueError):
        return None if is_input else ("path", os.path.realpath(path))
    return ("inode", st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


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
    gz = path.endswith(".gz")
    if path == "-":
        sys.stdout.flush()
        buf: Any = io.BufferedWriter(_StreamRaw(sys.stdout.buffer, STDOUT_LABEL))
        tmp = target = None
    else:
        label = path
        try:
            if _in_place(path):
                tmp = target = None
                raw = _Raw(path, "w")
            else:
                target = os.path.realpath(path)
                folder = os.path.dirname(target)
                fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp",
                                           dir=folder)
                # mkstemp makes the file 0600; give the final file the mode open() would (umask).
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(tmp, 0o666 & ~umask)
                from kvcli.output_thread import ThreadedRaw  # (it imports OutputFailed)

                raw = ThreadedRaw(fd, label)
        except OSError as err:
            raise InputError(f"cannot write {path}: {err.strerror}", field=field) from None
        raw.label = label
        buf = io.BufferedWriter(raw, _BUFFER if tmp is not None else io.DEFAULT_BUFFER_SIZE)
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
            raise OutputFailed(STDOUT_LABEL if path == "-" else path, err) from None

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
