"""The one module that writes: Rich tables for people, JSON / JSONL for machines, messages on stderr.

Commands build a `View` (the JSON document plus the tables a person sees) and hand it to `emit`;
they never print. stdout carries data only; messages, warnings and progress go to stderr.
`NO_COLOR` is honoured by Rich itself.
"""

from __future__ import annotations

import contextlib
import os
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
    console.print(rt)


def emit(view: View, *, as_json: bool, to_stderr: bool = False) -> None:
    """Write a result: the JSON document on stdout with ``as_json``, else its tables.

    ``to_stderr`` sends the human form to stderr (used when stdout carries an event stream).
    """
    if as_json:
        stream = sys.stderr if to_stderr else sys.stdout
        stream.buffer.write(orjson.dumps(view.data, option=_OPTS | orjson.OPT_INDENT_2) + b"\n")
        stream.flush()
        return
    console = stderr_console() if to_stderr else stdout_console()
    for t in view.tables:
        render_table(t, console)
    for line in view.text:
        console.print(line, markup=False)


def emit_lines(lines: Iterator[Any], stream: IO[bytes] | None = None) -> None:
    """JSON lines on stdout (or ``stream``), one object a line, flushed at the end."""
    out = stream if stream is not None else sys.stdout.buffer
    for obj in lines:
        out.write(orjson.dumps(obj, option=_OPTS) + b"\n")
    out.flush()


def message(text: str) -> None:
    """A message for a person, on stderr."""
    stderr_console().print(text, markup=False, highlight=False)


def warn(text: str) -> None:
    stderr_console().print(f"warning: {text}", markup=False, highlight=False, style="yellow")


@contextlib.contextmanager
def atomic_file(path: str, mode: str = "wb", *, keep_on_interrupt: bool = False) -> Iterator[IO]:
    """Open ``path`` for writing under a temporary name in the same folder; rename when complete.

    On an error the temporary file is removed, so bad input never leaves a half-written file.
    With ``keep_on_interrupt`` a Ctrl-C renames what was written so far (the writer must have
    ended it with a complete line) and re-raises.
    """
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    # mkstemp makes the file 0600; give the final file the mode a plain open() would (umask).
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    f = os.fdopen(fd, mode)
    try:
        yield f
    except KeyboardInterrupt:
        f.close()
        if keep_on_interrupt:
            os.replace(tmp, path)
        else:
            os.unlink(tmp)
        raise
    except BaseException:
        f.close()
        os.unlink(tmp)
        raise
    f.close()
    os.replace(tmp, path)


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

    InputError -> 2, NoDeviceError -> 3, Ctrl-C -> 130; anything else is a bug and keeps its traceback.
    """
    try:
        return fn()
    except InputError as err:
        stderr_console().print(f"error: {describe(err)}", markup=False, highlight=False)
        raise typer.Exit(2) from None
    except NoDeviceError as err:
        stderr_console().print(f"error: {err}", markup=False, highlight=False)
        raise typer.Exit(3) from None
    except KeyboardInterrupt:
        stderr_console().print("interrupted", markup=False)
        raise typer.Exit(130) from None
    except BrokenPipeError:
        # `kvcli ... | head`: the reader left; not an error worth a traceback.
        # Point stdout at /dev/null so that the interpreter's final flush does not raise again.
        with contextlib.suppress(Exception):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(0) from None
