"""Outputs refused before the work starts (one line, exit 2): `check_output` (a path that
cannot be written) and `check_distinct` (an output that is an input, another output, or the
command's own stdout). `in_place` says which paths are written where they stand (a device, a
FIFO, a descriptor) rather than under a temporary name and renamed (`kvcli.output_files`)."""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Iterable

from kvcore.errors import InputError

_DESCRIPTORS = ("/dev/stdin", "/dev/stdout", "/dev/stderr")
# outputs whose `-` puts them on stdout and the result on stderr: the way to have them there
_TO_STDOUT = {"events": "give another file, or -: the events on stdout, the summary on stderr",
              "output": "give another file, or -: it on stdout, the summary on stderr"}
_DESCRIPTOR_DIRS = ("/dev/fd/", "/proc/")


def in_place(path: str) -> bool:
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
    given as a file (or a file as a folder with ``folder``), a place without write permission,
    a symbolic link loop (``ln -s b a; ln -s a b; kvcli gen -o a`` replaced the link with a
    regular file, exit 0; a dangling link is followed: its target is made). Raises
    `InputError` (one line, exit 2). ``-`` (a file) and None pass."""
    if path == "-" and folder:
        # (a folder option has no stdout: `--plot -` made a folder named '-' and wrote the
        # charts there, exit 0, where - means stdin or stdout everywhere else)
        raise InputError("takes a folder, not - (stdout): it writes files in it (./- names a "
                         "folder called -)", field=field)
    if path is None or path == "-":
        return
    if not path:
        raise InputError("an empty path", field=field)
    try:
        os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise InputError(f"cannot write {path}: a symbolic link loop "
                             f"({(err.strerror or 'too many levels').lower()})",
                             field=field) from None
        if err.errno == errno.ENAMETOOLONG:
            # (a name past the folder's limit, 255 bytes, ran the whole work and then failed
            # the rename with a traceback: OSError 'File name too long')
            raise InputError(f"cannot write {path}: "
                             f"{(err.strerror or 'file name too long').lower()}",
                             field=field) from None
    except ValueError:      # (a NUL in the path: said below)
        pass
    if folder and os.path.exists(path) and not os.path.isdir(path):
        # (a device passed as in place: /dev/null ran the whole job, then 'cannot create')
        raise InputError(f"{path} is a file, not a folder", field=field)
    if in_place(path) and not folder:
        if os.path.isdir(path):
            raise InputError(f"{path} is a folder, not a file", field=field)
        if os.path.exists(path) and not os.access(path, os.W_OK):
            raise InputError(f"cannot write {path}: permission denied", field=field)
        return
    target = os.path.realpath(path)   # a symlink: its target is written, the link stays
    if folder:
        if os.path.islink(path) and not os.path.exists(path):
            # (the writers make the path itself: 'File exists' after the work, or a traceback)
            raise InputError(f"{path} is a link to {os.readlink(path)}, which does not exist",
                             field=field)
        if os.path.exists(target):
            if not os.path.isdir(target):
                raise InputError(f"{path} is a file, not a folder", field=field)
            if not os.access(target, os.W_OK | os.X_OK):
                raise InputError(f"cannot write in {path}: permission denied", field=field)
            _try_making(target, path, field)
            return
        top = target           # created with its parents: the nearest existing one decides
        while not os.path.exists(top):
            top = os.path.dirname(top)
        if not os.path.isdir(top):
            raise InputError(f"cannot create {path}: {top} is a file", field=field)
        if not os.access(top, os.W_OK | os.X_OK):
            raise InputError(f"cannot create {path}: {top} is not writable (permission "
                             "denied)", field=field)
        _try_making(top, path, field)
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


def _try_making(top: str, path: str, field: str) -> None:
    """Make a folder in `top` (the folder to write in, or the nearest existing one above a
    folder to make) and take it away again: what access() passes may still be refused (root
    under /proc: `--plot /proc/nope` ran the whole sweep, then 'cannot create the folder').
    A uniquely named folder of its own: another run making the same path is not touched."""
    import tempfile

    try:
        os.rmdir(tempfile.mkdtemp(prefix=".kvcli-probe-", dir=top))
    except OSError as err:
        raise InputError(f"cannot {'write in' if top == os.path.realpath(path) else 'create'} "
                         f"{path}: {err.strerror or err}", field=field) from None


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
    from kvcli.output_failures import flag

    stdin = [name for name, path in inputs if path == "-"]
    if len(stdin) > 1:
        # (the first reader took stdin to its end: the second said "<stdin>:1: not valid JSON")
        raise InputError(f"{stdin[1]} and {stdin[0]} are both - (stdin), which can be read "
                         "once: save one of them to a file")
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

    out = _stdout_key()
    for name, path in outputs:
        if path and path != "-" and out is not None and _same_file(path, out):
            # (--requests /dev/stdout --json: the request lines inside the JSON document)
            hint = _TO_STDOUT.get(name, "give another file")
            raise InputError(f"{path} is this command's stdout, where its result goes: the two "
                             f"would mix ({hint})", field=name)
    seen: list[tuple[tuple, str, bool]] = []     # (the file's key, its name, an input)
    for is_input, pairs in ((True, inputs), (False, outputs)):
        for name, path in pairs:
            if path is None or (path == "-" and not is_input):
                continue
            # An output written in place replaces nothing, but a descriptor's name
            # (/dev/stdin, /dev/fd/N) may stand for a regular file: an input (opened for
            # writing, it was truncated under the run: `replay /dev/stdin --events /dev/stdin
            # < T` left T an event stream, exit 0) or another output (`--events OUT --steps
            # /dev/fd/3 3>OUT`: the steps went to the file the rename then unlinked).
            placed = not is_input and in_place(path)
            key = _file_key(path, is_input or placed)
            if key is None:
                continue
            for other_key, other, other_input in seen:
                if key != other_key:
                    continue
                if other_input:
                    raise InputError(f"{path} is {other}, which this run reads: writing it would "
                                     f"{'truncate' if placed else 'replace'} it", field=name)
                raise InputError(f"{path} is also {flag(other)}'s output: one would replace "
                                 "the other", field=name)
            seen.append((key, name, is_input))


def _stdout_key() -> tuple[int, int] | None:
    """fd 1's (device, inode) where a file written there would mix with the command's own
    output: a pipe, a FIFO or a regular file; None for a terminal or a device (/dev/null)."""
    try:
        st = os.fstat(1)
    except OSError:
        return None
    return None if stat.S_ISCHR(st.st_mode) else (st.st_dev, st.st_ino)


def _same_file(path: str, key: tuple[int, int]) -> bool:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return False
    return (st.st_dev, st.st_ino) == key


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
