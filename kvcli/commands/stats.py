"""`kvcli stats SOURCE`: memory usage, eviction churn, prefix reuse, miss attribution and
preemption of a replay, as tables, one JSON document (`--json`) and PNG charts (`--plot DIR`).

SOURCE is an event stream written by `kvcli replay --events` (a file, `.gz`, or `-`), recognised
by its first line `{"kind":"header",...}`; anything else is a trace, replayed in-process with the
same options as `kvcli replay`, its events fed straight to the analysis (never written).
The JSON keys are documented in docs/stats.md.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kvcli import output
from kvcli import replay_options as ro
from kvcore.engine.options import ReplayOptions
from kvcore.errors import InputError

_ST = "Stats"


def register(app: typer.Typer) -> None:
    @app.command("stats")
    @ro.with_replay_options(first=False)
    def stats(
        source: Annotated[str, typer.Argument(help="Event stream (kvcli replay --events), or a "
                                              "trace to replay with the options below; '-' "
                                              "reads stdin.")],
        as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout "
                                              "(keys: docs/stats.md).", rich_help_panel=_ST)]
        = False,
        plot: Annotated[str | None, typer.Option("--plot", metavar="DIR", rich_help_panel=_ST,
                        help="Write PNG charts into DIR (needs the 'plot' extra).")] = None,
        window_requests: Annotated[int, typer.Option(min=1, rich_help_panel=_ST,
                                                     help="Hit-rate window, in counted "
                                                     "requests.")] = 1000,
        window_s: Annotated[float, typer.Option(min=0.001, rich_help_panel=_ST,
                                                help="Hit-rate window, in simulated "
                                                "seconds.")] = 60.0,
        top: Annotated[int, typer.Option(min=1, help="Rows in the top-N lists.",
                                         rich_help_panel=_ST)] = 10,
        opts: ReplayOptions | None = None,      # the replay's options (SOURCE a trace)
    ) -> None:
        """Memory usage, eviction churn, prefix reuse and why requests missed, from a replay."""
        output.run(lambda: run_stats(source, opts, as_json=as_json, plot=plot,
                                     window_requests=window_requests, window_s=window_s, top=top))


def run_stats(source: str, opts, *, as_json: bool, plot: str | None,
              window_requests: int, window_s: float, top: int) -> None:
    import os

    if os.path.isdir(source):       # a cluster's event folder (kvcli cluster --events DIR)
        from kvcli.cluster_stats import run_cluster_stats

        if plot is not None:
            raise InputError("not with a cluster's folder: plot one replica's stream",
                             field="plot")
        unused = _unused_replay_options(opts, "a cluster's folder of event streams")
        if unused:
            output.warn(unused)
        run_cluster_stats(source, as_json=as_json, window_requests=window_requests,
                          window_ms=window_s * 1000.0, top=top)
        return
    from kvcli.plots import STATS_CHARTS, chart_outputs

    # one stdin for two files; a chart on a file the run reads
    output.check_distinct(ro.read_files(source, opts), chart_outputs(plot, STATS_CHARTS))
    if plot is not None:
        from kvcli.plots import require_matplotlib

        output.check_output(plot, "plot", folder=True)      # before the work
        require_matplotlib()
    report = compute(source, opts, window_requests=window_requests,
                     window_ms=window_s * 1000.0, top=top)
    mismatches = report["source"].get("summary_mismatches")
    if mismatches:
        output.warn(f"totals differ from the stream's own summary: {mismatches}")
    if plot is not None:
        from kvcli.plots import write_plots

        for path in write_plots(report, plot):
            output.message(f"wrote {path}")
    from kvcli.stats_view import stats_view

    output.emit(stats_view(report), as_json=as_json)


def compute(source: str, opts, **options) -> dict:
    """The stats report of SOURCE (an event stream, or a trace replayed with the
    `ReplayOptions` ``opts``), streaming."""
    from kvcore.analysis.events_reader import (
        MAX_EVENT_LINE_BYTES,
        SNIFF_BUFFER_SIZE,
        is_event_stream,
    )
    from kvcore.analysis.stats import stats_from_lines
    from kvcore.sources import bounded_lines, close_source, open_source, source_size

    name, stream = open_source(source, buffer_size=SNIFF_BUFFER_SIZE)
    try:
        if is_event_stream(name, stream):       # peeks: the first line stays unread
            unused = _unused_replay_options(opts)
            warnings = [unused] if unused else []
            if unused:
                output.warn(unused)
            # (an endless line was read whole)
            lines = bounded_lines(name, stream, MAX_EVENT_LINE_BYTES)
            header = next(lines)
            with output.progress(source_size(source, stream),
                                 "reading events (bytes)") as advance:
                report = stats_from_lines(name, header, _counted(lines, advance), **options)
            report["warnings"] += warnings
            return report
    finally:
        close_source(stream)                    # stdin stays open for the trace reader
    return _replay_stats(source, opts, **options)


def _unused_replay_options(opts, what: str = "an event stream") -> str | None:
    """The warning for replay options given with an event stream or a cluster's folder
    (they apply only when SOURCE is a trace), or None."""
    if opts is None or not opts.given:
        return None
    flags = ", ".join(output.flag(k) for k in sorted(opts.given))
    return (f"option(s) {flags}: no effect on {what} (the replay options apply "
            "when SOURCE is a trace)")


def _counted(lines, advance, every: int = 1 << 20):
    """The lines, reporting their bytes to `advance` about every MiB (a progress bar)."""
    n = 0
    for line in lines:
        n += len(line)
        if n >= every:
            advance(n)
            n = 0
        yield line
    if n:
        advance(n)


def _replay_stats(trace: str, opts, **options) -> dict:
    from kvcore.analysis.stats import StreamingStats
    from kvcore.engine.events import CallbackEvents
    from kvcore.engine.replay import replay
    from kvcore.traces import read_trace

    feed = StreamingStats(**options)
    sink = CallbackEvents(feed)
    tr = read_trace(trace)                  # read first: the bar knows its end
    with output.progress(len(tr.requests), "replaying (requests)",
                         tr.output_tokens) as advance:
        summary = replay(trace, opts, sink, progress=advance, warn=output.warn, trace=tr,
                         output_progress=advance.output_tokens)
    if summary.interrupted:
        raise KeyboardInterrupt
    return feed.report()      # its warnings: the replay's (already on stderr)
