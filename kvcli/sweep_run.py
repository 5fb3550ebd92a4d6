"""`kvcli sweep`'s one function: check everything, run what is left, the grid's table.

Order of work: the arguments, the executor (installed?), the plot folder, the spec and every
job's options (`plan_sweep`: a bad key fails here, naming its line), the results file (locked
for the whole run, `sweep_lock`; its finished jobs and `--resume`), then the jobs. Each
finished job's line is appended and synced at once (`output.open_append`); the table and
`--json` come from the results file, in the grid's order.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvcli import output
from kvcli.plots import sweep_charts
from kvcli.sweep_view import sweep_view
from kvcore.errors import InputError, clipped, path_label
from kvcore.host_memory import check_parallel_jobs
from kvcore.named_choices import named_choices
from kvcore.sweep.metrics import METRICS, chosen, metric_values, swept_keys
from kvcore.sweep.results import job_warnings, job_warnings_by_id
from kvcore.warning_groups import sources_named

if TYPE_CHECKING:
    from kvcore.sweep.grid import Plan


@dataclass(frozen=True, slots=True)
class SweepArgs:
    args: list[str]
    traces: list[str]
    sets: list[str]
    command: str | None
    results: str | None
    resume: bool
    executor: str
    jobs: int | None
    ray_address: str | None
    metrics: str | None
    as_json: bool
    plot: str | None


def run(a: SweepArgs) -> int:
    names = _metric_names(a.metrics)
    if a.args[:1] == ["report"]:
        return report(a, names)
    if len(a.args) > 1:
        raise InputError(f"one SPEC file, got {len(a.args)} arguments ({' '.join(a.args)}); "
                         "`kvcli sweep report RESULTS` shows a results file", field="spec")
    spec = a.args[0] if a.args else None
    if spec is not None and (a.traces or a.sets or a.command is not None):
        given = "--trace" if a.traces else "--set" if a.sets else "--command"
        raise InputError(f"give a SPEC file or {given} (the grid on the command line), not "
                         "both", field="spec")
    if a.jobs is not None and a.jobs < 1:
        raise InputError(f"must be >= 1, got {a.jobs}", field="jobs")
    if a.ray_address is not None and a.executor != "ray":
        raise InputError("needs --executor ray", field="ray_address")
    from kvcli.sweep_lock import hold_results
    from kvcore.sweep.executor import check_executor
    from kvcore.sweep.run import plan_sweep

    check_executor(a.executor)
    _check_plot(a.plot)
    # (`or`: --command '' ran replays, unsaid)
    plan = plan_sweep(spec, command="replay" if a.command is None else a.command,
                      traces=a.traces, sets=a.sets)
    path = a.results or plan.spec.results
    if path is None:
        if spec is None:
            raise InputError("needed with --trace/--set: the file each finished job is "
                             "appended to", field="results")
        path = os.path.splitext(spec)[0] + ".results.jsonl"
    output.check_append(path, "results")
    output.check_distinct([], [("results", path), *sweep_charts(a.plot, plan.swept)],
                          folders=[("plot", a.plot)])
    # held from before it is read to the end (Ctrl-C included): a second sweep is refused
    with hold_results(path):
        return _sweep(a, plan, path, names)


def _sweep(a: SweepArgs, plan: Plan, path: str, names: list[str] | None) -> int:
    """The sweep of ``plan`` into ``path`` (held): what is left to run, run; the table."""
    from kvcore.sweep.executor import ExecutorSettings, make_executor
    from kvcore.sweep.results import check_same_defaults, read_results
    from kvcore.sweep.run import run_sweep

    held = read_results(path, missing_ok=True)
    if note := held.duplicates_note():
        output.warn(note)
    # (a line an older kvcli wrote under the job's path-based id counts as the job)
    now = {j.legacy_id: j.job_id for j in plan.jobs if j.legacy_id != j.job_id}
    ids = {j.job_id for j in plan.jobs}
    finished = {now.get(i, i) for i in held.by_id} & ids
    if held.lines and not a.resume:
        raise InputError(f"{path} already holds {len(held.lines)} finished job(s) "
                         f"({len(finished)} of this sweep): --resume runs only the missing "
                         "ones; or remove the file", field="results")
    other = sorted({d.get("command", "replay") for d in held.lines} - {plan.spec.command},
                   key=str)
    if other:
        # (it ran, and `sweep report` then refused the file for good: "mixes commands")
        raise InputError(f"{path} holds results of `kvcli sweep --command {other[0]}`, this "
                         f"sweep runs {plan.spec.command}: give another results file",
                         field="results")
    check_same_defaults([d for d in held.lines if now.get(d["job_id"], d["job_id"]) in finished],
                         path, plan.spec.command)
    todo = len(plan.jobs) - len(finished)
    ex = make_executor(a.executor, ExecutorSettings(jobs=a.jobs, address=a.ray_address))
    if todo:
        ex.check(todo)      # (before a job: a refusal leaves no file the sweep made)
        if a.ray_address is None:
            # the workers on this machine hold their jobs' pools side by side
            check_parallel_jobs([plan.job_bytes.get(j.job_id, 0) for j in plan.jobs
                                 if j.job_id not in finished],
                                min(a.jobs or os.cpu_count() or 1, todo))
    swept = f"{', '.join(plan.swept)} swept" if plan.swept else "nothing swept"
    if plan.folded:
        swept += (f"; {plan.folded} grid point(s) differ only in options of a router they do "
                  "not run: each is the job it equals")
    output.message(f"sweep: {len(plan.jobs)} job(s) ({swept}), "
                   f"{len(finished)} finished before, {todo} to run; executor {ex.name}; "
                   f"results: {path}")
    t0 = time.perf_counter()
    try:
        with output.open_append(path, field="results") as out, \
                output.progress(todo, "sweep") as advance:
            done = run_sweep(plan, ex, finished=finished,
                             record=lambda line: out.line(output.dumps(line)),
                             progress=advance,
                             on_failure=lambda job, err: output.warn(
                                 f"job {job.index} ({job.job_id}) failed: "
                                 f"{err.splitlines()[0]}"))
    except KeyboardInterrupt:
        output.message(f"interrupted: the finished jobs are in {path}; --resume runs the rest")
        return output.interrupt_code()
    # (an InputError here: refused before a job finished, Ray could not start or be reached;
    # `hold_results` removes the file it created)
    # (with nothing to run it said "ran 0 job(s) ... (local: 2 worker processes)": none started)
    output.message(f"ran {done.ran} job(s) in {time.perf_counter() - t0:.1f} s "
                   f"({ex.describe()})" if todo else
                   f"nothing left to run: every job of this sweep is in {path}")
    lines = {now.get(i, i): line for i, line in read_results(path).by_id.items()}
    rows = [lines.get(j.job_id) for j in plan.jobs]
    doc = grid_document(plan.spec.command, plan.swept, rows, names,
                        [(j.index, j.job_id, path_label(j.trace), j.config) for j in plan.jobs])
    _say_warnings(rows)
    _emit(doc, a)
    if done.failed:
        output.message(f"{len(done.failed)} job(s) failed (not recorded; --resume runs them "
                       "again)")
        return 1
    return 0


def report(a: SweepArgs, names: list[str] | None) -> int:
    """`kvcli sweep report RESULTS`: the table of a results file, finished or partial."""
    from kvcore.sweep.results import read_results

    if len(a.args) != 2:
        raise InputError("usage: kvcli sweep report RESULTS.jsonl", field="spec")
    for flag, v in (("trace", a.traces), ("set", a.sets), ("command", a.command),
                    ("results", a.results), ("resume", a.resume), ("jobs", a.jobs),
                    ("ray_address", a.ray_address)):
        if v:
            raise InputError("not with report (it reads a results file)", field=flag)
    _check_plot(a.plot)
    res = read_results(a.args[1])
    if not res.lines:
        raise InputError("no finished job in it", path=a.args[1])
    if res.partial_tail:
        output.warn(f"{a.args[1]}: its last line was cut short (a job in flight when the "
                    "sweep was killed); left out")
    if note := res.duplicates_note():
        output.warn(note)
    lines = res.sorted()
    commands = {d.get("command", "replay") for d in lines}
    if len(commands) > 1:
        raise InputError(f"mixes commands {sorted(commands)}", path=a.args[1])
    defaults = {d.get("defaults") for d in lines}
    if len(defaults) > 1:
        output.warn(f"{a.args[1]}: its jobs ran under {len(defaults)} sets of option defaults "
                    "(kvcli versions): their numbers may not compare")
    swept = swept_keys(lines)
    # (before a chart replaces the file it reads: --plot D on D/sweep-num_blocks.png)
    output.check_distinct([("the results file", a.args[1])], sweep_charts(a.plot, swept))
    doc = grid_document(commands.pop(), swept, lines, names,
                        [(d.get("index", i), d["job_id"], d["trace"], d["config"])
                         for i, d in enumerate(lines)])
    indexes = [j["index"] for j in doc["jobs"]]
    if several := len(set(indexes)) < len(indexes):
        # (a file resumed with another grid keeps the first grid's lines: docs/sweep.md)
        output.warn(f"{a.args[1]}: its jobs come from more than one grid (their indexes "
                    "repeat): '#' is each job's place in its own grid; warnings name jobs by id")
    _say_warnings(lines, by_id=several)
    _emit(doc, a, report=os.path.basename(a.args[1]))
    return 0


def _say_warnings(rows: Sequence[dict | None], by_id: bool = False) -> None:
    """The jobs' warnings (in their results lines), each said once with the jobs that gave it:
    by index, or ``by_id`` (a file of several grids, whose indexes repeat: "jobs 0, 2:" named
    a job of each) by id, as the table's last column shows them, "every job" for all."""
    if not by_id:
        for text, which in job_warnings(list(rows)):
            output.warn(f"{sources_named('job', which)}: {text}")
        return
    for text, ids in job_warnings_by_id(rows):       # type: ignore[arg-type]
        who = f"job{'s' * (len(ids) > 1)} {', '.join(ids)}" if len(ids) < len(rows) else ""
        output.warn(f"{who or 'every job'}: {text}")


def grid_document(command: str, swept: list[str], rows: Sequence[dict | None],
                  names: list[str] | None, jobs: list[tuple[int, str, str, dict]]) -> dict:
    """The JSON document: every job in order with its swept values, metrics and result (null
    for a job not finished). No wall-clock time: the same sweep gives the same bytes."""
    out: list[dict[str, Any]] = []
    for (index, jid, trace, config), line in zip(jobs, rows, strict=True):
        result = None if line is None else line["result"]
        out.append({"index": index, "job_id": jid, "trace": trace, "config": config,
                    "swept": {k: (trace if k == "trace" else config.get(k)) for k in swept},
                    "metrics": None if result is None else metric_values(command, result),
                    "result": result})
    shown = chosen(command, names, [j["metrics"] for j in out if j["metrics"]])
    return {"command": command, "swept": swept, "metrics": shown, "jobs_total": len(out),
            "jobs_finished": sum(1 for j in out if j["result"] is not None), "jobs": out}


def _emit(doc: dict, a: SweepArgs, report: str | None = None) -> None:
    if a.plot is not None:
        from kvcli.sweep_plots import write_sweep_plots

        paths = write_sweep_plots(doc, a.plot)
        for p in paths:
            output.message(f"wrote {p}")
        if not paths:
            output.warn("no swept numeric option with two values or more: no plot")
    output.emit(sweep_view(doc, report), as_json=a.as_json)


def _metric_names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [n.strip() for n in text.split(",")]
    for i, n in enumerate(names):
        # ('' was dropped and an empty list meant the default: --metrics '' showed the default)
        if n not in METRICS:
            raise InputError(f"unknown metric {clipped(n)}; "
                             f"{named_choices(n, list(METRICS), 'metrics', 'docs/sweep.md')}",
                             field="metrics")
        if n in names[:i]:
            raise InputError(f"metric {n!r} named twice", field="metrics")
    return names


def _check_plot(folder: str | None) -> None:
    if folder is None:
        return
    from kvcli.plots import require_matplotlib

    output.check_output(folder, "plot", folder=True)
    require_matplotlib()
