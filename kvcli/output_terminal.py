"""What kvcli draws on a terminal (`kvcli.output` writes through it): the consoles, and a
`Table` as a rich table.

rich is imported on first use: a `--json` run that prints no message never needs it (~25 ms of
a process's start).
"""

from __future__ import annotations

import sys
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table as RichTable

    from kvcli.output import Table


# markup=False: every string these consoles draw is data (a trace's path, a request id, a model
# name), never rich markup: with markup on, "run[red]1.jsonl" was drawn as "run1.jsonl".
def stdout_console() -> Console:
    return console_class()(file=sys.stdout, highlight=False, soft_wrap=False, markup=False)


@cache
def console_class() -> type[Console]:
    """Rich's Console, but a reader that leaves (`kvcli ... | head -1`) is a BrokenPipeError for
    `run` (exit 0, as with --json): Rich's own answer was a silent exit code 1."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return _Console


# The console of the progress bar on stderr now (`kvcli.progress_bar.progress`), if any: a
# line printed through another console went to the terminal past the bar's (rich unwraps its
# stderr proxy), glued to the bar's line ("... 0/? 0:00:00 ETA warning: ..."); printed through
# this one it goes above the bar.
shown_bars: list[Console] = []


def stderr_console() -> Console:
    if shown_bars:
        return shown_bars[-1]
    from rich.console import Console

    return Console(file=sys.stderr, highlight=False, soft_wrap=True, markup=False)


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.5g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return "" if v is None else str(v)


def _numeric(v: Any) -> bool:
    """A number, or a number already formatted ("2,444.856", "100.00%", "-3 / 4")."""
    if isinstance(v, str):
        head = v.lstrip("+-")
        return head[:1].isdigit()
    return isinstance(v, int | float) and not isinstance(v, bool)


def _right(t: Table, i: int) -> bool:
    """Whether column `i` lines up on the right: numbers do; a column of text only (a router's
    rule) reads from the left, and so does the first (the rows' names)."""
    return bool(i) and (not t.rows or any(_numeric(row[i]) for row in t.rows if i < len(row)))


def rich_table(t: Table) -> RichTable:
    from rich.table import Table as RichTable

    rt = RichTable(title=t.title, caption=t.caption, title_justify="left")
    for i, c in enumerate(t.columns):
        rt.add_column(c, justify="right" if _right(t, i) else "left")
    for row in t.rows:
        rt.add_row(*(_cell(v) for v in row))
    return rt


# A terminal narrower than this is drawn as if it were this wide (its lines wrap): at COLUMNS=1
# every cell was cut to one character, a hit rate of 77.66% shown as "7", without a mark.
MIN_COLUMNS = 40
# And the widest drawn: `--help` pads every line to the width, 14 MB at COLUMNS=100000.
MAX_COLUMNS = 1000


def clamp_columns(environ: dict | None = None) -> None:
    """Bring a COLUMNS (and typer's TERMINAL_WIDTH) outside MIN_COLUMNS..MAX_COLUMNS into it,
    for every console the process makes (rich reads them when it makes one): COLUMNS=0 drew
    `--help` as nothing at all."""
    import os

    env = os.environ if environ is None else environ
    for key in ("COLUMNS", "TERMINAL_WIDTH"):
        value = env.get(key)
        if value is None:
            continue
        if value.strip().isascii() and value.strip().isdigit():
            env[key] = str(min(max(int(value), MIN_COLUMNS), MAX_COLUMNS))
        else:       # no width (rich's isdigit() took COLUMNS=² and int() failed: a traceback)
            del env[key]


# Rows past which a table is drawn by `plain_lines`, not by rich: rich measures every cell, twice
# when piped (~0.8 ms a row of 9 columns): `kvcli cluster --replicas 20000` spent 20 s drawing
# its per-replica table, after a SIGTERM too. A table that long is read with a pager or grep.
RICH_ROWS = 1000


def plain_lines(t: Table) -> list[str]:
    """`t` drawn in rich's box characters (the heavy head its tables have), each cell as wide
    as its column's widest, never cropped or wrapped; the title and caption on lines of their
    own."""
    from rich.cells import cell_len

    from kvcore.errors import printable

    # (a row longer than the columns gets headless columns, as rich gives it)
    head = [str(c) for c in t.columns]
    head += [""] * (max(map(len, t.rows), default=0) - len(head))
    rows = [[printable(_cell(v)) for v in row] + [""] * (len(head) - len(row))
            for row in t.rows]      # (a newline in a request id would split its row)
    widths = [max(cell_len(c), *(cell_len(r[i]) for r in rows)) for i, c in enumerate(head)]
    right = [_right(t, i) for i in range(len(head))]

    def line(cells: list[str], bar: str) -> str:
        return bar + bar.join(
            f" {' ' * (w - cell_len(c)) + c if r else c + ' ' * (w - cell_len(c))} "
            for c, w, r in zip(cells, widths, right, strict=True)) + bar

    def rule(left: str, fill: str, mid: str, end: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + end

    out = [t.title] if t.title else []
    out += [rule("┏", "━", "┳", "┓"), line(head, "┃"), rule("┡", "━", "╇", "┩")]
    out += [line(r, "│") for r in rows]
    out.append(rule("└", "─", "┴", "┘"))
    if t.caption:
        out.append(t.caption)
    return out


def render_table(t: Table, console: Console) -> None:
    if len(t.rows) > RICH_ROWS and t.columns:
        console.file.write("\n".join(plain_lines(t)) + "\n")
        return
    rt = rich_table(t)
    if console.is_terminal:
        console.width = max(console.width, MIN_COLUMNS)   # (a terminal that narrow)
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


def tolerant() -> None:
    """Let stdout and stderr write what their encoding cannot hold as escapes (``\\u2581``)
    rather than fail: under ``PYTHONIOENCODING=ascii`` (or latin-1) a sparkline, a help text's
    '…' or a request id 'réq-✓' ended in a UnicodeEncodeError traceback, exit 1, half the
    output written. A stream that already chose how to fail (``ascii:replace``) keeps its
    choice; JSON is written as UTF-8 bytes to the buffer and is untouched."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) == "strict":
            reconfigure(errors="backslashreplace")
