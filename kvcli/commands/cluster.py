"""`kvcli cluster TRACE`: N replicas of the engine behind a router (docs/cluster.md).

Every replay option applies to each replica (`kvcli/replay_options.py`); this module adds the
cluster's own: the replicas, the router(s) and their options, what the router may see, and the
outputs (`--events DIR`, `--decisions FILE`, `--json`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, cast

import typer

from kvcli import replay_options as ro
from kvcli.live_options import with_live_options
from kvcore.engine.options import ReplayOptions
from kvcore.live.options import LiveOptions

if TYPE_CHECKING:
    from typer.core import _TyperParameter

_C = "Cluster"
_O = "Outputs"

# optional only so that `--list-routers [--json]` runs without one (the body asks for it)
TraceArg = Annotated[str | None, typer.Argument(
    help="Trace file (JSONL, .gz, Azure CSV) or - for stdin (not with --list-routers).")]
ReplicasOpt = Annotated[int, typer.Option(
    "--replicas", help="Replicas, each a vLLM engine with the replay options.",
    rich_help_panel=_C)]
# (repeatable: a second --router replaced the first without a word, one row where two were asked)
RouterOpt = Annotated[list[str] | None, typer.Option(
    "--router", metavar="NAME", help="The router (--list-routers lists them); repeat it to "
    "compare several, as --routers does. [default: round_robin]", show_default=False,
    rich_help_panel=_C)]
RoutersOpt = Annotated[str | None, typer.Option(
    "--routers", metavar="A,B,...", help="Compare several routers on the same trace: one row "
    "each (not with --router).", rich_help_panel=_C)]
RouterOptOpt = Annotated[list[str] | None, typer.Option(
    "--router-opt", metavar="KEY=VALUE", help="A router option (repeat it); KEY alone applies "
    "to every chosen router that takes it, ROUTER.KEY to that router only (and wins over KEY).",
    rich_help_panel=_C)]
SeedOpt = Annotated[int, typer.Option(
    "--seed", help="Seed of the routers' random choices (same seed, same result).",
    rich_help_panel=_C)]
IntervalOpt = Annotated[float, typer.Option(
    "--metrics-interval-ms", help="Routers read replicas' metrics sampled this often "
    "(simulated ms; llm-d scrapes every 50).", rich_help_panel=_C)]
LagOpt = Annotated[float, typer.Option(
    "--kv-event-lag-ms", help="KV events reach an event-fed router this long after vLLM "
    "publishes them (with the step's output).", rich_help_panel=_C)]
# (str, not Path: typer made '' the path '.', and --events '' wrote into the working folder)
EventsOpt = Annotated[str | None, typer.Option(
    "--events", metavar="DIR", help="A folder: per router and replica, our event stream and vLLM's "
    "(ROUTER/replica-K.events.jsonl, ROUTER/replica-K.vllm.jsonl).", rich_help_panel=_O)]
DecisionsOpt = Annotated[str | None, typer.Option(
    "--decisions", metavar="FILE", help="One JSON line per routing decision.", rich_help_panel=_O)]
PlotOpt = Annotated[str | None, typer.Option(
    "--plot", metavar="DIR", help="Write cluster.png into DIR: hit rate and losses per router, "
    "each replica's share of prefill (needs the 'plot' extra).", rich_help_panel=_O)]
JsonOpt = Annotated[bool, typer.Option("--json", help="The result as JSON: {\"routers\": "
                                       "[...]}.", rich_help_panel=_O)]


ListOpt = Annotated[bool, typer.Option(
    "--list-routers", help="List the routers, their options and defaults (with --json: as JSON), "
    "and exit.", rich_help_panel=_C)]


def _given_besides_listing(ctx: typer.Context) -> list[str]:
    """What the command line gave beside --list-routers and --json, as the user would name it
    (``argument TRACE``, ``--replicas``): the listing runs nothing with them."""
    from kvcli.given_params import given_params

    return [f"argument {p.name.upper()}" if not p.opts[0].startswith("-") else f"option {p.opts[0]}"
            for p in given_params(ctx) if p.name not in ("list_routers", "as_json")]


def register(app: typer.Typer) -> None:
    @app.command("cluster")
    @ro.with_replay_options(first=False)    # the cluster's own options first in the help
    @with_live_options()
    def cluster_cmd(
        ctx: typer.Context,
        trace: TraceArg = None,
        replicas: ReplicasOpt = 2,
        router: RouterOpt = None,
        routers: RoutersOpt = None,
        router_opt: RouterOptOpt = None,
        seed: SeedOpt = 0,
        metrics_interval_ms: IntervalOpt = 50.0,
        kv_event_lag_ms: LagOpt = 0.0,
        events: EventsOpt = None,
        decisions: DecisionsOpt = None,
        as_json: JsonOpt = False,
        plot: PlotOpt = None,
        list_routers: ListOpt = False,
        opts: ReplayOptions | None = None,
        live: LiveOptions | None = None,
        metrics: str | None = None,
    ) -> None:
        """Replay a trace through N vLLM replicas behind a router; where the hits were lost.

        --list-routers lists the routers and their options. See docs/cluster.md for the
        rules, the decomposition of lost hits and every JSON key.
        """
        from kvcli import output
        from kvcli.cluster_run import routers_view, run

        if list_routers:
            # (not an eager callback: that ran before --json was read, and printed the table)
            ignored = _given_besides_listing(ctx)
            if ignored:
                output.warn(f"{', '.join(ignored)}: no effect with --list-routers (it lists "
                            "the routers and exits)")
            output.run(lambda: output.emit(routers_view(), as_json=as_json))
            return
        if trace is None:
            from typer._click.exceptions import MissingParameter

            # (cast: a typer command's parameters are typer's own, `params` names click's base)
            raise MissingParameter(ctx=ctx, param=cast("_TyperParameter", next(
                p for p in ctx.command.params if p.name == "trace")))
        names = routers.split(",") if routers is not None else router or ["round_robin"]
        # --routers overrides --router: a --router given with it was dropped without a word
        dropped = " --router ".join(router) if routers is not None and router else None
        code = output.run(lambda: run(
            trace, opts, replicas, names, router_opt or [], seed, metrics_interval_ms,
            kv_event_lag_ms, events, decisions, as_json, plot, live, metrics,
            "router" if routers is None else "routers", dropped))
        if code:
            raise typer.Exit(code)
