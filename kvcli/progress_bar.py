"""`progress`: a progress bar on stderr when stderr is a terminal (re-exported by
`kvcli.output`, the one module that writes to the terminal)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


class Advance:
    """What `progress` yields: ``advance(n)`` moves the bar by n; ``advance.total(n)`` sets
    the end once the work knows it (the curve learns its run count after reading the trace)."""

    def __init__(self, bar=None, task=None) -> None:
        self._bar, self._task = bar, task

    def __call__(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, n)

    def total(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, total=n)


@contextlib.contextmanager
def progress(total: int | None, description: str) -> Iterator[Advance]:
    """A progress bar (count, rate, ETA) on stderr when stderr is a terminal; a no-op
    otherwise."""
    if not sys.stderr.isatty():
        yield Advance()
        return
    from rich import progress as rp

    columns = (rp.TextColumn("{task.description}"), rp.BarColumn(), rp.MofNCompleteColumn(),
               rp.TaskProgressColumn(), rp.TimeElapsedColumn(), rp.TextColumn("ETA"),
               rp.TimeRemainingColumn())
    from kvcli.output_terminal import shown_bars, stderr_console

    with rp.Progress(*columns, console=stderr_console(), transient=True) as bar:
        # (warnings said while the bar shows print through its console, above it)
        shown_bars.append(bar.console)
        try:
            yield Advance(bar, bar.add_task(description, total=total))
        finally:
            shown_bars.remove(bar.console)
