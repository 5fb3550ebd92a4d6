"""`kvcli events listen ENDPOINT`: print vLLM's KV event batches as they arrive (docs/live.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from kvcore.live.options import DEFAULT_ENDPOINT

_P = "Listen"

EndpointArg = Annotated[str, typer.Argument(
    metavar="ENDPOINT", help="Where the publisher is: tcp://HOST:PORT connects to a bound one "
    f"(vLLM's default {DEFAULT_ENDPOINT} binds, so tcp://127.0.0.1:5557); tcp://*:PORT binds "
    "for a publisher that connects.")]
ReplayOpt = Annotated[str | None, typer.Option(
    "--replay-endpoint", metavar="ENDPOINT", rich_help_panel=_P,
    help="The publisher's replay socket: sequence gaps (a late start included) are filled "
    "from it.")]
TopicOpt = Annotated[str, typer.Option("--topic", rich_help_panel=_P,
                                       help="Subscribe to this topic (a prefix).")]
CountOpt = Annotated[int | None, typer.Option(
    "--count", metavar="N", rich_help_panel=_P, help="Stop after N batches.")]
IdleOpt = Annotated[float, typer.Option(
    "--idle-timeout-s", rich_help_panel=_P,
    help="Stop after this long without a message (0: never).")]
LinesOpt = Annotated[bool, typer.Option(
    "--lines", rich_help_panel=_P, help="JSON lines even when stdout is a terminal (which "
    "otherwise gets a live summary).")]
# (a string, checked by `kvcore.live.subscriber.check_first_seq`: every integer option stops below 2**63,
# and vLLM's numbers travel as 8 unsigned bytes)
FirstOpt = Annotated[str, typer.Option(
    "--first-seq", metavar="N", rich_help_panel=_P, help="The first sequence number expected "
    "(0: from the publisher's start; a gap before the first batch is filled from the replay "
    "socket); 0 to 2**64 - 1.")]


def register(app: typer.Typer) -> None:
    events_app = typer.Typer(help="vLLM's KV events over ZMQ: listen to a publisher.",
                             no_args_is_help=True)
    app.add_typer(events_app, name="events")

    @events_app.command("listen")
    def listen_cmd(
        endpoint: EndpointArg,
        replay_endpoint: ReplayOpt = None,
        topic: TopicOpt = "",
        count: CountOpt = None,
        idle_timeout_s: IdleOpt = 10.0,
        first_seq: FirstOpt = "0",
        lines: LinesOpt = False,
    ) -> None:
        """Print the KV event batches a publisher sends, one JSON line each ({"seq", "ts",
        "events", "data_parallel_rank"}); check sequence gaps and fill them from the replay
        socket ({"gap": [first, last]} where it cannot). On a terminal, unless --lines: a
        live summary (blocks stored and removed per rank and medium). A one-line tally goes to
        stderr."""
        import sys

        from kvcli import output
        from kvcli.live_run import run_listen

        live_view = sys.stdout.isatty() and not lines
        code = output.run(lambda: run_listen(endpoint, replay_endpoint, topic, count,
                                             idle_timeout_s, first_seq, live_view))
        if code:
            raise typer.Exit(code)
