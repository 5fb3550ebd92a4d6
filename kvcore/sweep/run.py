"""`plan_sweep` and `run_sweep`: a spec to checked jobs, then what is left of them run.

The caller (the command) owns the results file: `run_sweep` hands it each finished job's line
the moment it arrives (`record`), so a killed sweep loses only the jobs in flight, and skips
the jobs `finished` already names (`--resume`). Failed jobs are returned, not recorded: a
resumed sweep runs them again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kvcore.sweep.executor import Executor
from kvcore.sweep.grid import Job, Plan, expand
from kvcore.sweep.results import results_line
from kvcore.sweep.spec import SweepSpec, load_spec, spec_from_flags


def plan_sweep(spec_path: str | None, *, command: str = "replay", traces: list[str] | None = None,
               sets: list[str] | None = None) -> Plan:
    """The sweep's checked jobs from a spec file, or from the flags' form."""
    spec: SweepSpec = (load_spec(spec_path) if spec_path is not None
                       else spec_from_flags(command, traces or [], sets or []))
    return expand(spec)


@dataclass(slots=True)
class SweepRun:
    ran: int = 0                                    # jobs run and recorded now
    skipped: int = 0                                # finished before (--resume)
    failed: list[tuple[Job, str]] = field(default_factory=list)


def run_sweep(plan: Plan, executor: Executor, *, finished: set[str],
              record: Callable[[dict[str, Any]], None],
              progress: Callable[[int], None] | None = None,
              on_failure: Callable[[Job, str], None] | None = None) -> SweepRun:
    """Run the plan's jobs not in `finished` on `executor`; `record` gets each finished job's
    results line as it finishes, `progress(1)` follows each job (failed ones too)."""
    todo = [j for j in plan.jobs if j.job_id not in finished]
    out = SweepRun(skipped=len(plan.jobs) - len(todo))
    try:
        for job, outcome in executor.run(todo, plan.traces):
            if "result" in outcome:
                record(results_line(job, outcome))
                out.ran += 1
            else:
                out.failed.append((job, outcome["error"]))
                if on_failure is not None:
                    on_failure(job, outcome["error"])
            if progress is not None:
                progress(1)
    finally:
        executor.close()
    return out
