"""The one module that writes: Rich tables for people, JSON / JSONL for machines, messages on stderr.

Commands build a `View` (the JSON document plus the tables a person sees) and hand it to `emit`;
they never print. stdout carries data only; messages, warnings and progress go to stderr.
`NO_COLOR` is honoured by Rich itself.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import orjson
import typer

from kvcli import closed_streams
from kvcli.output_append import check_append, open_append
from kvcli.output_checks import check_distinct, check_output
from kvcli.output_files import STDOUT_LABEL, OutputFailed, open_output
from kvcli.output_terminal import render_table, rich_table, stderr_console, stdout_console
from kvcli.progress_bar import Advance, progress
from kvcli.signals import install_signal_handlers, interrupt_code
from kvcore.errors import InputError, NoDeviceError, printable

__all__ = ["Advance", "OutputFailed", "Table", "View", "check_append", "check_distinct",
           "check_output",
           "describe", "dumps_pretty", "emit", "emit_lines", "emit_live",
           "install_signal_handlers", "interrupt_code", "message", "open_append", "open_output",
           "progress", "run", "warn"]

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


# Fields whose option is not their name in kebab case (the CPU tier's: vLLM's and the issue's
# spelling on the command line, the oracle's in a trace's config line).
FLAGS = {"offload_block_size": "kv-offloading-block-size",
         "disable_hybrid": "disable-hybrid-kv-cache-manager",
         "eviction_policy": "offload-eviction-policy",
         "store_threshold": "offload-store-threshold",
         "sync_load_budget_bytes": "offload-sync-load-budget-bytes",
         "load_steps": "offload-load-steps", "store_steps": "offload-store-steps"}


# Fields that a command takes as a positional argument, not an option: its metavar.
ARGUMENTS = {"endpoint": "ENDPOINT", "spec": "SPEC", "model_argument": "MODEL",
             "op_script": "OPS"}


def flag(field: str) -> str:
    """The option of a field: ``--kebab-case`` (or its `FLAGS` spelling)."""
    return "--" + FLAGS.get(field, field.replace("_", "-"))


def describe(err: InputError) -> str:
    """One line for an input error: ``file:line: field 'x': ...`` for a file's problem (as
    `InputError` words it), ``option --x-y: ...`` for an option's (a field without a file;
    ``argument ENDPOINT: ...`` for a positional one);
    a remedy names its flag: ``(--skip-bad skips such requests)``."""
    if err.remedy:
        name, does = err.remedy
        err = InputError(f"{err.message} ({flag(name)} {does})", path=err.path,
                         line=err.line, field=err.field)
    if err.field and err.path is None and err.line is None:
        if err.field in ARGUMENTS:
            return f"argument {ARGUMENTS[err.field]}: {err.message}"
        option, _, key = err.field.partition(".")     # (a key of a JSON option's value)
        named = flag(option) + ("'s " + key if key else "")
        return f"option {named}: {err.message}"
    return str(err)


# Requests hold their tokens while they run or wait preempted, as vLLM's do: what a trace's
# requests hold at once is known only as they run (six requests of 10,000,000 output tokens,
# --no-async-scheduling, under ulimit -v 2500000: a MemoryError traceback after 60 s)
OUT_OF_MEMORY = ("error: out of memory: the run needed more host memory than this process may "
                 "take (the machine's, or a ulimit -v): fewer or shorter requests, or a smaller "
                 "pool, fit")


def run(fn: Callable[[], Any]) -> Any:
    """Call a command's one function, turning known failures into one line and an exit code.

    InputError -> 2 (an output that cannot be written included, checked before the work),
    OutputFailed (a full disk, on a file or stdout) and MemoryError (the host's memory, or a
    ulimit -v, spent while the work ran) -> 1, NoDeviceError -> 3, Ctrl-C -> 130,
    SIGTERM -> 143, SIGHUP -> 129 (128 + the signal, the shell's convention; see
    `install_signal_handlers`); anything else is a bug and keeps its traceback.
    """
    try:
        return fn()
    except OutputFailed as err:
        # (one line: a newline in an output's path, named in the message, is escaped)
        stderr_console().print(printable(f"error: {err}"), markup=False, highlight=False)
        if err.where == STDOUT_LABEL:
            _silence_stdout()
        raise typer.Exit(1) from None
    except InputError as err:
        stderr_console().print(printable(f"error: {describe(err)}"), markup=False,
                               highlight=False)
        raise typer.Exit(2) from None
    except NoDeviceError as err:
        stderr_console().print(f"error: {err}", markup=False, highlight=False)
        raise typer.Exit(3) from None
    except MemoryError:
        # (what the run held is released by now: the frames that held it have unwound)
        stderr_console().print(OUT_OF_MEMORY, markup=False, highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        stderr_console().print("interrupted", markup=False)
        raise typer.Exit(interrupt_code()) from None
    except BrokenPipeError:
        # `kvcli ... | head`: the reader left; not an error worth a traceback.
        _silence_stdout()
        raise typer.Exit(0) from None


def run_printing(fn: Callable[[], Any], *, then_exit: bool = True) -> Any:
    """`run` for what writes stdout itself (`--help`, `--version`): a full disk is one line and
    exit 1, a reader that left exit 0 (they ended in a traceback); with ``then_exit`` False, a
    reader that left returns None and the caller ends as it would (the help that `kvcli` with
    no command prints is still a usage error, exit 2)."""
    def guarded() -> Any:
        try:
            return fn()
        except BrokenPipeError:
            if then_exit:
                raise
            _silence_stdout()
            return None
        except OSError as err:
            raise OutputFailed(STDOUT_LABEL, err) from None

    return run(guarded)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not raise again."""
    if closed_streams.silence(sys.stdout):
        return
    with contextlib.suppress(Exception):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
