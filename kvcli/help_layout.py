"""Option names whole in `--help`, at any terminal width.

Typer 0.29 draws each option panel as a rich table of six columns (name, short name, negative
name, negative short name, type, help) whose cells rich cuts with an ellipsis when the table is
wider than the terminal. kvcli's options carry vLLM's long names
(``--prefix-cache-retention-interval``, ``--no-scheduler-reserve-full-isl``): at 80 columns
`kvcli replay --help` showed 13 of them cut (``--enable-prefix-…``), at 120 still 3, so the
help could not tell a user what to type. `install()` changes the layout only: a flag's negative
name goes under its name in the same cell, name cells never wrap or shorten, the type column
folds, and the help column takes the width left. Rows, texts and styles stay typer's, but a
command's description is re-flowed: typer's rich mode keeps a docstring's line breaks, which cut
its lines short at every width but the source's (``its ceiling and`` / ``knees``), and square
brackets are escaped: rich's markup took ``[default: 10]``, ``[first, last]`` and the ``[@K][c]``
of ``kvcli clock explain --case``'s syntax for style tags and dropped them from the help.

It replaces the ``Table`` that ``typer.rich_utils`` draws with, the first time help is shown:
rich's table (and typer's rich_utils) are imported then, not at start-up (~23 ms a command). typer is pinned (pyproject.toml);
`tests/test_help_layout.py` fails when the layout no longer applies.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.table import Table

# what rich's markup reads as a tag (``[bold]``, ``[default: 10]``), not already escaped
_TAG = re.compile(r"(?<!\\)\[(?=[a-z#/@][^[]*?\])")


def _stack(first: Any, second: Any) -> Any:
    """One cell for a name and its negative: ``first`` above ``second``."""
    from rich.text import Text

    if not str(second):
        return first
    if not str(first):
        return second
    return Text.assemble(first, "\n", second)


def _one_a_line(names: Any) -> Any:
    """An option's names, "--num-blocks,--num-gpu-blocks-override" as typer joins them, one a
    line: vLLM's long aliases side by side widened the names column until the help column
    cut words at 80 columns."""
    from rich.text import Text

    if not isinstance(names, Text) or "," not in names.plain:
        return names
    return Text("\n").join(names.split(",", include_separator=False))


TYPE_WIDTH = 16


def _choices(kind: Any) -> Any:
    """A long choice list (``<timestamp|ignore|step>``) broken after its bars, lines of at most
    `TYPE_WIDTH` where the choices allow, instead of cut inside a word."""
    from rich.text import Text

    if not isinstance(kind, Text) or len(kind.plain) <= TYPE_WIDTH or "|" not in kind.plain:
        return kind
    cuts, start = [], 0
    bars = [i + 1 for i, c in enumerate(kind.plain) if c == "|"]
    for prev, bar in zip([0, *bars], [*bars, len(kind.plain)]):
        if bar - start > TYPE_WIDTH and prev > start:
            cuts.append(prev)
            start = prev
    return Text("\n").join(kind.divide(cuts)) if cuts else kind


@cache
def options_table() -> type[Table]:
    """typer's options table with names stacked and whole: a subclass of rich's ``Table``
    (made on first use, so that rich's table is not imported at start-up)."""
    from rich.table import Table

    class OptionsTable(Table):
        """typer's options table with names stacked and whole (see the module docstring)."""

        _stacked = False

        def add_row(self, *cells: Any, **kwargs: Any) -> None:
            # typer's row: [required,] long, short, negative long, negative short, type, help
            # (typer's options table declares no columns; its other tables do, and pass through)
            if len(cells) not in (6, 7) or (self.columns and not self._stacked):
                super().add_row(*cells, **kwargs)
                return
            lead, rest = cells[:len(cells) - 6], cells[len(cells) - 6:]
            long, short, neg_long, neg_short, kind, text = rest
            row = (*lead, _stack(_one_a_line(long), neg_long), _stack(_one_a_line(short), neg_short),
                   _choices(kind), text)
            if not self.columns:
                self._stacked = True
                for _ in lead:
                    self.add_column(no_wrap=True)
                self.add_column(no_wrap=True, overflow="fold")    # names: whole
                self.add_column(no_wrap=True, overflow="fold")    # short names
                self.add_column(overflow="fold", max_width=TYPE_WIDTH)    # type / choices
                self.add_column(overflow="fold", ratio=1)         # help: the rest
            super().add_row(*row, **kwargs)

    return OptionsTable


def _literal(text: str | None) -> str | None:
    """Square brackets shown as written (escaped for rich's markup; escaping twice is a no-op)."""
    return _TAG.sub(r"\\[", text) if text else text


def _reflow(text: str | None) -> str | None:
    """A docstring's paragraphs each on one line (typer wraps them to the terminal); a paragraph
    that starts with click's ``\\b`` keeps its lines."""
    if not text:
        return text
    paragraphs = text.split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(x.strip() for x in p.splitlines())
                       for p in paragraphs)


def _prepare(cmd: Any) -> None:
    """A command's and its options' help texts as `install()` shows them (idempotent)."""
    cmd.help = _literal(_reflow(cmd.help))
    for param in getattr(cmd, "params", ()):
        if getattr(param, "help", None):
            param.help = _literal(param.help)


def install() -> bool:
    """Use `options_table()` in typer's help; True when installed (typer 0.29's layout)."""
    try:
        from typer import core
    except ImportError:
        return False
    done = False
    for cls in (core.TyperCommand, core.TyperGroup):
        original = cls.format_help
        if getattr(original, "_kvcli_layout", False):
            continue

        def format_help(self: Any, ctx: Any, formatter: Any, _original: Any = original) -> None:
            from typer import rich_utils

            from kvcli.output_failures import run_printing
            from kvcli.output_terminal import console_class

            rich_utils.Table = options_table()      # type: ignore[misc]
            # (Rich's own Console met a reader that left with a silent exit 1)
            rich_utils.Console = console_class()   # type: ignore[misc]
            for cmd in (self, *getattr(self, "commands", {}).values()):   # a group lists its own
                _prepare(cmd)
            return run_printing(lambda: _original(self, ctx, formatter), then_exit=False)

        format_help._kvcli_layout = True     # type: ignore[attr-defined]
        cls.format_help = format_help        # type: ignore[method-assign]
        done = True
    return done
