"""`kvcli sweep SPEC` (or `--trace T --set KEY=V1,V2 ...`): a grid of replays or cluster runs on
this machine's cores or on a Ray cluster; `kvcli sweep report RESULTS` shows a results file.

`report` is the first argument rather than a Typer sub-command: a group's sub-command cannot
sit beside a SPEC argument, and `kvcli sweep report R.jsonl` is what the issue asked for (a spec
file named `report` is `./report`). docs/sweep.md has the spec's keys and every option.
"""

from __future__ import annotations

from typing import Annotated

import typer

_G = "Grid (without a SPEC file)"
_E = "Where the jobs run"
_O = "Outputs"

ArgsArg = Annotated[list[str] | None, typer.Argument(
    metavar="SPEC | report RESULTS",
    help="A spec file (TOML, or JSON by its .json suffix: traces, \\[options], \\[grid]); or "
    "`report RESULTS.jsonl` to show a finished or partial sweep's results.", show_default=False)]
TraceOpt = Annotated[list[str] | None, typer.Option(
    "--trace", metavar="TRACE", help="A trace to sweep (repeat it for several).",
    rich_help_panel=_G)]
SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", metavar="KEY=V1,V2,...", help="An option and its values (as the replay's JSON "
    "config names it: num_blocks=4096,8192); one value: every job's; repeat it.",
    rich_help_panel=_G)]
CommandOpt = Annotated[str | None, typer.Option(
    "--command", metavar="replay|cluster", help="What each job runs. [default: replay]",
    rich_help_panel=_G)]
ResultsOpt = Annotated[str | None, typer.Option(
    "--results", metavar="FILE", help="The results file each finished job is appended to "
    "(needed with --trace/--set). [default with a SPEC: its results key, else SPEC's name + "
    ".results.jsonl]",
    rich_help_panel=_O)]
ResumeOpt = Annotated[bool, typer.Option(
    "--resume", help="Continue a sweep: run only the jobs the results file does not hold.",
    rich_help_panel=_O)]
ExecutorOpt = Annotated[str, typer.Option(
    "--executor", metavar="local|ray", help="local: worker processes on this machine; ray: "
    "Ray tasks (the 'ray' extra).", rich_help_panel=_E)]
JobsOpt = Annotated[int | None, typer.Option(
    "--jobs", help="local: worker processes; ray: jobs in flight at most (a local Ray gets this many "
    "CPUs). [default: local: the cores; ray: twice the cluster's CPUs]",
    rich_help_panel=_E, show_default=False)]
RayAddressOpt = Annotated[str | None, typer.Option(
    "--ray-address", metavar="ADDRESS", help="The Ray cluster to run on. [default: "
    "RAY_ADDRESS, else a local Ray started for the sweep]", rich_help_panel=_E)]
MetricsOpt = Annotated[str | None, typer.Option(
    "--metrics", metavar="A,B,...", help="The table's metrics; docs/sweep.md lists them. [default: hit rate, with "
    "the CPU tier, TTFT p99, preemptions, evictions; cluster: losses too]",
    rich_help_panel=_O)]
JsonOpt = Annotated[bool, typer.Option(
    "--json", help="The grid as JSON (jobs in the sweep's order).", rich_help_panel=_O)]
PlotOpt = Annotated[str | None, typer.Option(
    "--plot", metavar="DIR", help="Write sweep-OPTION.png into DIR for each swept numeric "
    "option: hit rate and TTFT p99 against it, a line per value of the others (the 'plot' "
    "extra).", rich_help_panel=_O)]


def register(app: typer.Typer) -> None:
    @app.command("sweep")
    def sweep_cmd(
        args: ArgsArg = None,
        trace: TraceOpt = None,
        set_: SetOpt = None,
        command: CommandOpt = None,
        results: ResultsOpt = None,
        resume: ResumeOpt = False,
        executor: ExecutorOpt = "local",
        jobs: JobsOpt = None,
        ray_address: RayAddressOpt = None,
        metrics: MetricsOpt = None,
        as_json: JsonOpt = False,
        plot: PlotOpt = None,
    ) -> None:
        """Run a grid of replays (or cluster runs) in parallel; the results survive a kill.

        Each finished job is appended to the results file at once; --resume runs only the
        missing jobs; the table and the JSON list jobs in the grid's order. See docs/sweep.md.
        """
        from kvcli import output
        from kvcli.sweep_run import SweepArgs, run

        a = SweepArgs(args=list(args or []), traces=list(trace or []), sets=list(set_ or []),
                      command=command, results=results, resume=resume, executor=executor,
                      jobs=jobs, ray_address=ray_address, metrics=metrics, as_json=as_json,
                      plot=plot)
        code = output.run(lambda: run(a))
        if code:
            raise typer.Exit(code)
