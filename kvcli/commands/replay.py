"""`kvcli replay TRACE`: replay a request trace through vLLM 0.33's KV cache stack.

The replay's own options are declared once, in `kvcli/replay_options.py`; this module adds the
outputs (event stream, step and request lines, JSON).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from kvcli import replay_options as ro
from kvcli.live_options import with_live_options
from kvcli.replay_view import summary_view
from kvcore.engine.options import ReplayOptions
from kvcore.live.options import LiveOptions

_O = "Outputs"
# A trace of more requests than this is read twice rather than held (`kvcore.traces.stream`):
# past it, a replay's memory is that of its requests in flight plus ~90 bytes a request
# (held: ~1 KB a request). The second reading costs ~8% of the CPU time of a replay of tiny
# requests (80,000: 8.27 s against 7.70 s held), about 1% of a Mooncake one.
HELD_REQUESTS = 50_000


class EventsFormat(str, Enum):
    jsonl = "jsonl"
    vllm = "vllm"


TraceArg = Annotated[str, typer.Argument(help="Trace file (JSONL, .gz, Azure CSV) or - for stdin.")]
EventsOpt = Annotated[str | None, typer.Option(
    "--events", help="Write the event stream here (- for stdout; the summary then goes to "
    "stderr).", rich_help_panel=_O)]
EventsFormatOpt = Annotated[EventsFormat, typer.Option(
    "--events-format", help="jsonl: ours (every block operation); vllm: vLLM's KV event "
    "batches.", rich_help_panel=_O)]
RequestsOpt = Annotated[str | None, typer.Option(
    "--requests", help="One JSON line per request.", rich_help_panel=_O)]
StepsOpt = Annotated[str | None, typer.Option(
    "--steps", help="One JSON line per engine step.", rich_help_panel=_O)]
JsonOpt = Annotated[bool, typer.Option("--json", help="The summary as JSON.",
                                       rich_help_panel=_O)]
CallsOpt = Annotated[bool, typer.Option(
    "--calls", help="With --explain: the call trees of the request's KV cache manager calls "
    "(as `kvcli script --calls`).", rich_help_panel=_O)]
ExplainOpt = Annotated[str | None, typer.Option(
    "--explain", metavar="REQUEST_ID", help="Instead of the summary, the story of one request: "
    "arrival, the steps it ran in, its hit and who cached it, its blocks, preemption, finish, "
    "and who later hit or evicted its cached blocks.", rich_help_panel=_O)]



def register(app: typer.Typer) -> None:
    @app.command("replay")
    @ro.with_replay_options(first=True)
    @with_live_options()
    def replay_cmd(
        trace: TraceArg,
        events: EventsOpt = None,
        events_format: EventsFormatOpt = EventsFormat.jsonl,
        requests: RequestsOpt = None,
        steps: StepsOpt = None,
        as_json: JsonOpt = False,
        explain: ExplainOpt = None,
        calls: CallsOpt = False,
        opts: ReplayOptions | None = None,
        live: LiveOptions | None = None,
        metrics: str | None = None,
    ) -> None:
        """Replay a trace through vLLM 0.33's KV cache (and scheduler) and summarize the cache.

        Reads Mooncake, Bailian, token-id and length traces (JSONL, .gz, -) and Azure CSV. See
        docs/replay.md for the modes, the event schemas and every JSON key; docs/live.md for
        publishing KV events over ZMQ and vLLM's metrics as vLLM does.
        """
        from kvcli import output

        fmt = events_format.value
        if explain is not None:
            from kvcli.commands.replay_explain import run_explain

            given = [f for f, v in (("events", events), ("requests", requests),
                                    ("steps", steps), ("metrics", metrics)) if v is not None]
            if fmt != "jsonl":
                given.append("events_format")
            if live is not None and live != LiveOptions():
                given.append("kv_events_endpoint" if live.publishes else "realtime")
            code = output.run(lambda: run_explain(trace, opts, explain, as_json, given,
                                                  calls))
        else:
            code = output.run(lambda: run_replay(trace, opts, events, fmt,
                                                 None if requests is None else str(requests),
                                                 None if steps is None else str(steps),
                                                 as_json, calls, live, metrics))
        if code:
            raise typer.Exit(code)


def run_replay(trace: str, opts, events: str | None, events_format: str,
               requests: str | None, steps: str | None, as_json: bool,
               calls: bool = False, live_opts: LiveOptions | None = None,
               metrics: str | None = None) -> int:
    """Open the outputs, replay, emit the summary; returns 128 + the signal after Ctrl-C
    (130), SIGTERM (143) or SIGHUP (129), else 0. Outputs go through `output.open_output`."""
    from kvcli import output
    from kvcore.errors import InputError
    from kvcore.gc_pause import gc_paused
    from kvcore.traces import read_trace

    if calls:
        raise InputError("needs --explain REQUEST_ID (kvcli script --calls draws an op "
                         "script's calls)", field="calls")
    if events_format != "jsonl" and events is None:
        raise InputError("needs --events PATH (it chooses that stream's format; "
                         "--kv-events-endpoint publishes vLLM's batches whatever it is)",
                         field="events_format")
    if steps is not None and opts is not None and opts.mode == "cache":
        raise InputError("engine mode only: cache mode runs no engine steps (the file would "
                         "stay empty)", field="steps")
    for name, path in (("requests", requests), ("steps", steps), ("metrics", metrics)):
        if path == "-":
            raise InputError("only --events may be - (stdout)", field=name)
    for name, path in (("events", events), ("requests", requests), ("steps", steps),
                       ("metrics", metrics)):
        output.check_output(path, name)     # before the work: a bad path fails at once
    output.check_distinct(ro.read_files(trace, opts), [("events", events), ("requests", requests),
                                                         ("steps", steps), ("metrics", metrics)])
    live_opts = live_opts or LiveOptions()
    is_live = live_opts != LiveOptions() or metrics is not None
    if is_live:
        live_opts.check(metrics_file=metrics is not None)
    # reading and replaying make no cycles; what they leave lives until the process ends
    with gc_paused(freeze=True):
        return _replay_outputs(read_trace(trace, keep=HELD_REQUESTS), trace, opts, events,
                               events_format, requests, steps, as_json, live_opts, is_live,
                               metrics)


def _replay_outputs(tr, trace: str, opts, events: str | None, events_format: str,
                    requests: str | None, steps: str | None, as_json: bool,
                    live_opts: LiveOptions, is_live: bool, metrics: str | None) -> int:
    import contextlib

    from kvcli import output
    from kvcore.engine.events import JsonlEvents
    from kvcore.engine.replay import replay
    from kvcore.engine.vllm_events import VllmEvents

    with contextlib.ExitStack() as stack:
        def open_out(path: str | None, name: str):
            if path is None:
                return None
            return stack.enter_context(output.open_output(path, field=name,
                                                          keep_on_interrupt=True))

        ev_file = open_out(events, "events")
        sink = None
        if ev_file is not None:
            sink = (VllmEvents(ev_file) if events_format == "vllm"
                    else JsonlEvents(ev_file, line_thread=True))
        req_file = open_out(requests, "requests")
        step_file = open_out(steps, "steps")
        live = None
        if is_live:
            from kvcli.live_run import open_live

            live = open_live(live_opts, open_out(metrics, "metrics"))
        with output.progress(len(tr.requests), "replay", tr.output_tokens) as advance:
            summary = replay(trace, opts, sink, steps_out=step_file, requests_out=req_file,
                             progress=advance, warn=output.warn, trace=tr, live=live,
                             output_progress=advance.output_tokens)
    output.emit(summary_view(summary), as_json=as_json, to_stderr=(events == "-"))
    if summary.interrupted:
        output.message("interrupted: the outputs hold what was replayed so far")
        return output.interrupt_code()
    from kvcli.live_run import linger_exit

    return linger_exit(live)
