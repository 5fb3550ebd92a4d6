"""`progress`: a progress bar on stderr when stderr is a terminal (re-exported by
`kvcli.output`, the one module that writes to the terminal)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


class Advance:
    """What `progress` yields: ``advance(n)`` moves the bar by n; ``advance.total(n)`` sets
    the end once the work knows it (the curve learns its run count after reading the trace);
    ``advance.output_tokens(n)`` says a replay's output tokens so far."""

    def __init__(self, bar=None, task=None, description: str = "", requests: int | None = None,
                 output_total: int = 0) -> None:
        self._bar, self._task, self._description = bar, task, description
        self._requests, self._output_total = requests, output_total
        self._done = 0          # what advance(n) counted
        self._tokens = -1       # the output tokens the bar shows (-1: it counts advance(n))

    def __call__(self, n: int = 1) -> None:
        if self._bar is None:
            return
        self._done += n
        if self._tokens < 0:
            self._bar.advance(self._task, n)
        else:
            self._bar.update(self._task, beside=self._beside())

    def total(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, total=n)

    def output_tokens(self, n: int) -> None:
        """A replay's output tokens so far: from the first call on, a bar given their total
        (`progress`'s ``output_tokens``) counts them, with the requests done beside it. A
        request that decodes for a minute moves it (a bar of requests stood at 0/1). It keeps
        its highest count (a preempted request's tokens leave the count until it runs again).
        """
        if self._bar is None or not self._output_total or n <= self._tokens:
            return
        if self._tokens < 0:
            self._bar.update(self._task, total=self._output_total, completed=0,
                             description=self._description.removesuffix(" (requests)")
                             + " (output tokens)",
                             beside=self._beside())
        self._tokens = n
        self._bar.update(self._task, completed=n)

    def _beside(self) -> str:
        return f"{self._done:,}/{self._requests:,} requests"


@contextlib.contextmanager
def progress(total: int | None, description: str, output_tokens: int = 0
             ) -> Iterator[Advance]:
    """A progress bar (count, rate, ETA) on stderr when stderr is a terminal; a no-op
    otherwise. With ``output_tokens`` (a replay's: its requests' output lengths summed),
    ``total`` counts requests, and the bar counts output tokens once it is told them."""
    if not sys.stderr.isatty():
        yield Advance()
        return
    from rich import progress as rp

    columns = (rp.TextColumn("{task.description}"), rp.BarColumn(), rp.MofNCompleteColumn(),
               rp.TaskProgressColumn(), rp.TimeElapsedColumn(), rp.TextColumn("ETA"),
               rp.TimeRemainingColumn(), rp.TextColumn("{task.fields[beside]}"))
    from kvcli.output_terminal import shown_bars, stderr_console

    with rp.Progress(*columns, console=stderr_console(), transient=True) as bar:
        # (warnings said while the bar shows print through its console, above it)
        shown_bars.append(bar.console)
        try:
            task = bar.add_task(description, total=total, beside="")
            yield Advance(bar, task, description, total, output_tokens)
        finally:
            shown_bars.remove(bar.console)
