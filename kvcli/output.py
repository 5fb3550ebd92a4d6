"""The one module that writes: Rich tables for people, JSON / JSONL for machines, messages on stderr.

Commands build a `View` (the JSON document plus the tables a person sees) and hand it to `emit`;
they never print. stdout carries data only; messages, warnings and progress go to stderr.
`NO_COLOR` is honoured by Rich itself.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from kvcli.output_append import check_append, open_append
from kvcli.output_checks import check_distinct, check_output
from kvcli.output_failures import describe, flag, run, run_printing
from kvcli.output_files import STDOUT_LABEL, OutputFailed, open_output
from kvcli.output_terminal import render_table, rich_table, stderr_console, stdout_console
from kvcli.progress_bar import Advance, progress
from kvcli.signals import install_signal_handlers, interrupt_code

__all__ = [
    "Advance",
    "OutputFailed",
    "Table",
    "View",
    "check_append",
    "check_distinct",
    "check_output",
    "describe",
    "dumps_pretty",
    "emit",
    "emit_lines",
    "emit_live",
    "flag",
    "install_signal_handlers",
    "interrupt_code",
    "message",
    "open_append",
    "open_output",
    "progress",
    "run",
    "run_printing",
    "warn",
]

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


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes (orjson), numpy values allowed."""
    try:
        return orjson.dumps(obj, option=_OPTS)
    except TypeError:
        return _wide(obj, None)


def dumps_pretty(obj: Any) -> bytes:
    """Indented JSON bytes with a final newline (`--json` documents, calibration files)."""
    try:
        return orjson.dumps(obj, option=_OPTS | orjson.OPT_INDENT_2) + b"\n"
    except TypeError:
        return _wide(obj, 2) + b"\n"


def _wide(obj: Any, indent: int | None) -> bytes:
    """The stdlib's JSON, for what orjson refuses: an integer past 64 bits that an input
    carried through (a model config's 2**64 max_position_embeddings crashed `--json` after the
    run; the options refuse such values, inputs' free fields can still hold them)."""
    import json

    return json.dumps(obj, indent=indent, default=_plain, ensure_ascii=False).encode()


def _plain(x: Any) -> Any:
    tolist = getattr(x, "tolist", None)     # numpy values and arrays
    if tolist is not None:
        return tolist()
    raise TypeError(f"not JSON: {type(x).__name__}")


def emit(view: View, *, as_json: bool, to_stderr: bool = False) -> None:
    """Write a result: the JSON document on stdout with ``as_json``, else its tables.

    ``to_stderr`` sends the human form to stderr (used when stdout carries an event stream).
    """
    with _writing("stderr" if to_stderr else STDOUT_LABEL):
        if as_json:
            stream = sys.stderr if to_stderr else sys.stdout
            stream.buffer.write(dumps_pretty(view.data))
            stream.flush()
            return
        console = stderr_console() if to_stderr else stdout_console()
        for t in view.tables:
            render_table(t, console)
        for line in view.text:
            # Piped or redirected: a line as it is, never wrapped at 80 columns.
            console.print(line, markup=False, soft_wrap=not console.is_terminal)
        (sys.stderr if to_stderr else sys.stdout).flush()


@contextlib.contextmanager
def _writing(where: str) -> Iterator[None]:
    """A write to a standard stream that fails (`--json > /dev/full`, a stdout the shell
    closed) is `OutputFailed`, one line and exit 1 (see `run`); a reader that left stays a
    BrokenPipeError (exit 0)."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as err:
        raise OutputFailed(where, err) from None


def emit_tree(label: str, nodes: list[dict]) -> None:
    """Call trees (`kvcore.call_tree.CallNode.to_dict`) under one label, for a person."""
    from rich.tree import Tree

    def add(parent: Any, node: dict) -> None:
        args = ", ".join(f"{k}={v}" for k, v in node["args"].items())
        ret = "" if node["returns"] is None else f" -> {node['returns']}"
        branch = parent.add(f"{node['call']}({args}){ret}")
        for child in node["children"]:
            add(branch, child)

    tree = Tree(label)
    for node in nodes:
        add(tree, node)
    with _writing(STDOUT_LABEL):
        stdout_console().print(tree, markup=False, highlight=False)


def emit_call_trees(ops: list[dict]) -> None:
    """`kvcli script --calls` for a person: per op a line (what it did, the free queue's ends
    before and after) and its call tree."""
    for res in ops:
        if "calls" not in res:
            continue                # the summary line
        fq = res["free_queue"]
        emit_tree(f"op {res['op']} {res.get('id', '')}: ok={res.get('ok')}  free queue "
                  f"{fq['before']['head']}..{fq['before']['tail']} ({fq['before']['free']}) -> "
                  f"{fq['after']['head']}..{fq['after']['tail']} ({fq['after']['free']})",
                  res["calls"])


def emit_live(items: Iterator[Any], fold: Callable[[Any], None],
              table: Callable[[], Table]) -> None:
    """A live view on a terminal's stdout: each item is folded into the caller's state
    (`fold`), and `table()` is redrawn in place (4 times a second at most)."""
    from rich.live import Live

    with Live(rich_table(table()), console=stdout_console(), refresh_per_second=4) as live:
        for item in items:
            fold(item)
            live.update(rich_table(table()))


def emit_lines(lines: Iterable[Any], stream: IO[bytes] | None = None,
               flush_each: bool = False) -> None:
    """JSON lines on stdout (or ``stream``), one object a line, flushed at the end (or after
    each line: a live stream)."""
    out = stream if stream is not None else sys.stdout.buffer
    # (a caller's own stream's failure is the caller's to word)
    with _writing(STDOUT_LABEL) if stream is None else contextlib.nullcontext():
        for obj in lines:
            out.write(orjson.dumps(obj, option=_OPTS) + b"\n")
            if flush_each:
                out.flush()
        out.flush()


def message(text: str) -> None:
    """A message for a person, on stderr."""
    stderr_console().print(text, markup=False, highlight=False)


def warn(text: str) -> None:
    from rich.text import Text

    # (a Text of its own style, not print's style=, which a shown progress bar's line, drawn in
    # the same print, took too: its description yellow)
    stderr_console().print(Text(f"warning: {text}", style="yellow"), highlight=False)
