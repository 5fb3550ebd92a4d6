"""The one module that writes: Rich tables for people, JSON / JSONL for machines, messages on stderr.

Commands build a `View` (the JSON document plus the tables a person sees) and hand it to `emit`;
they never print. stdout carries data only; messages, warnings and progress go to stderr.
`NO_COLOR` is honoured by Rich itself.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import signal
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table as RichTable

from kvcore.errors import InputError, NoDeviceError

_OPTS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


@dataclass(frozen=True, slots=True)
class Table:
    """One table for a person: a title, column names and rows of plain values."""

    title: str
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    caption: str | None = None


@dataclass(slots=True)
class View:
    """What a command returns: `data` is the JSON document; `tables` and `text` are its human form."""

    data: Any
    tables: list[Table] = field(default_factory=list)
    text: list[str] = field(default_factory=list)  # free lines (timelines, notes) after the tables


def stdout_console() -> Console:
    return Console(file=sys.stdout, highlight=False, soft_wrap=False)


def stderr_console() -> Console:
    return Console(file=sys.stderr, highlight=False, soft_wrap=True)


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes (orjson), numpy values allowed."""
    return orjson.dumps(obj, option=_OPTS)


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.5g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return "" if v is None else str(v)


def render_table(t: Table, console: Console) -> None:
    rt = RichTable(title=t.title, caption=t.caption, title_justify="left")
    for i, c in enumerate(t.columns):
        rt.add_column(c, justify="left" if i == 0 else "right")
    for row in t.rows:
        rt.add_row(*(_cell(v) for v in row))
    if console.is_terminal:
        console.print(rt)
        return
    # Piped or redirected: never crop a cell to fit 80 columns; the table takes its width.
    from rich.measure import Measurement

    narrow = console.width
    wide = Measurement.get(console, console.options.update(width=1 << 16), rt).maximum
    console.width = max(narrow, wide)
    try:
        console.print(rt)
    finally:
        console.width = narrow


def emit(view: View, *, as_json: bool, to_stderr: bool = False) -> None:
    """Write a result: the JSON document on stdout with ``as_json``, else its tables.

    ``to_stderr`` sends the human form to stderr (used when stdout carries an event stream).
    """
    try:
        if as_json:
            stream = sys.stderr if to_stderr else sys.stdout
            stream.buffer.write(orjson.dumps(view.data, option=_OPTS | orjson.OPT_INDENT_2)
                                + b"\n")
            stream.flush()
            return
        console = stderr_console() if to_stderr else stdout_console()
        for t in view.tables:
            render_table(t, console)
        for line in view.text:
            # Piped or redirected: a line as it is, never wrapped at 80 columns.
            console.print(line, markup=False, soft_wrap=not console.is_terminal)
        (sys.stderr if to_stderr else sys.stdout).flush()
    except BrokenPipeError:
        raise
    except OSError as err:      # `--json > /dev/full`: one line, exit 1 (see `run`)
        raise OutputFailed("stderr" if to_stderr else _STDOUT, err) from None


def emit_lines(lines: Iterator[Any], stream: IO[bytes] | None = None) -> None:
    """JSON lines on stdout (or ``stream``), one object a line, flushed at the end."""
    out = stream if stream is not None else sys.stdout.buffer
    try:
        for obj in lines:
            out.write(orjson.dumps(obj, option=_OPTS) + b"\n")
        out.flush()
    except BrokenPipeError:
        raise
    except OSError as err:
        if stream is not None:
            raise
        raise OutputFailed(_STDOUT, err) from None


def message(text: str) -> None:
    """A message for a person, on stderr."""
    stderr_console().print(text, markup=False, highlight=False)


def warn(text: str) -> None:
    stderr_console().print(f"warning: {text}", markup=False, highlight=False, style="yellow")


class OutputFailed(Exception):
    """Writing an output failed while the work ran (a full disk, a reader that left a FIFO):
    one line, exit code 1. `open_output` raises it for its files, `emit` for stdout."""

    def __init__(self, where: str, err: OSError) -> None:
        self.where = where
        self.errno = err.errno
        super().__init__(f"cannot write {where}: {err.strerror or err}")


_STDOUT = "stdout"


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


def _in_place(path: str) -> bool:
    """True when ``path`` is written where it stands (never replaced): it exists and is not a
    regular file (a device, a FIFO, a socket), or it names a descriptor (``/dev/stdout``,
    ``/dev/fd/N``, ``/proc/...``), whose target a rename would not reach."""
    a = os.path.abspath(path)
    if a.startswith(("/dev/", "/proc/")):
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
    if _in_place(path):
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
        buf: Any = io.BufferedWriter(_StreamRaw(sys.stdout.buffer, _STDOUT))
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
                raw = _Raw(fd, "w")
        except OSError as err:
            raise InputError(f"cannot write {path}: {err.strerror}", field=field) from None
        raw.label = label
        buf = io.BufferedWriter(raw)
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
            raise OutputFailed(_STDOUT if path == "-" else path, err) from None

    def discard() -> None:
        with contextlib.suppress(Exception):
            close()
        with contextlib.suppress(Exception):
            buf.raw.close()
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    try:
        yield f
    except KeyboardInterrupt:
        if not keep_on_interrupt:
            discard()
            raise
        try:
            close()
        except BaseException:
            discard()
            raise
        if tmp is not None:
            os.replace(tmp, target)
        raise
    except BaseException:
        discard()
        raise
    try:
        close()
    except BaseException:
        discard()
        raise
    if tmp is not None:
        os.replace(tmp, target)


def atomic_file(path: str, mode: str = "wb", *, keep_on_interrupt: bool = False,
                field: str = "output"):
    """`open_output` under its old name (binary only)."""
    if mode != "wb":
        raise ValueError("outputs are binary")
    return open_output(path, field=field, keep_on_interrupt=keep_on_interrupt)


@contextlib.contextmanager
def progress(total: int | None, description: str) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr when stderr is a terminal; yields ``advance(n)``, a no-op otherwise."""
    if not sys.stderr.isatty():
        yield lambda n=1: None
        return
    from rich.progress import Progress

    with Progress(console=stderr_console(), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)


def describe(err: InputError) -> str:
    """One line for an input error: ``file:line: field 'x': ...`` for a file's problem (as
    `InputError` words it), ``option --x-y: ...`` for an option's (a field without a file);
    a remedy names its flag: ``(--skip-bad skips such requests)``."""
    if err.remedy:
        name, does = err.remedy
        err = InputError(f"{err.message} (--{name.replace('_', '-')} {does})", path=err.path,
                         line=err.line, field=err.field)
    if err.field and err.path is None and err.line is None:
        return f"option --{err.field.replace('_', '-')}: {err.message}"
    return str(err)


def run(fn: Callable[[], Any]) -> Any:
    """Call a command's one function, turning known failures into one line and an exit code.

    InputError -> 2 (an output that cannot be written included, checked before the work),
    OutputFailed (a full disk, on a file or stdout) -> 1, NoDeviceError -> 3, Ctrl-C -> 130,
    SIGTERM -> 143, SIGHUP -> 129 (128 + the signal, the shell's convention; see
    `install_signal_handlers`); anything else is a bug and keeps its traceback.
    """
    try:
        return fn()
    except OutputFailed as err:
        stderr_console().print(f"error: {err}", markup=False, highlight=False)
        if err.where == _STDOUT:
            _silence_stdout()
        raise typer.Exit(1) from None
    except InputError as err:
        stderr_console().print(f"error: {describe(err)}", markup=False, highlight=False)
        raise typer.Exit(2) from None
    except NoDeviceError as err:
        stderr_console().print(f"error: {err}", markup=False, highlight=False)
        raise typer.Exit(3) from None
    except KeyboardInterrupt:
        stderr_console().print("interrupted", markup=False)
        raise typer.Exit(interrupt_code()) from None
    except BrokenPipeError:
        # `kvcli ... | head`: the reader left; not an error worth a traceback.
        _silence_stdout()
        raise typer.Exit(0) from None


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not raise again."""
    with contextlib.suppress(Exception):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


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
