"""What a worker runs for one job: the same pure call `kvcli replay` / `kvcli cluster` make.

`run_job(job, trace)` returns an outcome, a small dict that crosses process (and machine)
boundaries: `{"result": ..., "wall_time_s": ..., "kvcli_version": ...}` or, when the job
failed, `{"error": ..., "input_error": bool}`. `result` is what `kvcli replay --json` (or
`kvcli cluster --json`) prints for the job, less its wall-clock times (`wall_time_s`, in the
replay's summary and each router's result): those move to the outcome, so that a job's result
is the same bytes on any executor, any machine, any run.
"""

from __future__ import annotations

import time
import traceback
from typing import Any

from kvcore.errors import InputError
from kvcore.sweep.grid import Job
from kvcore.traces import Trace


def kvcli_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("kvcli")
    except metadata.PackageNotFoundError:
        return "unknown"


def run_job(job: Job, trace: Trace) -> dict[str, Any]:
    """Run one job on its (already read) trace; never raises for the job's own failure."""
    t0 = time.perf_counter()
    try:
        result = compute(job, trace)
    except InputError as err:
        return {"error": str(err), "input_error": True}
    except Exception as err:  # noqa: BLE001 (a bug in one job must not end the sweep)
        return {"error": f"{type(err).__name__}: {err}\n{traceback.format_exc()}",
                "input_error": False}
    if _interrupted(result):
        return {"error": "interrupted", "input_error": False}
    from kvcore.sweep.results import defaults_id

    return {"result": strip_wall_times(result),
            "wall_time_s": round(time.perf_counter() - t0, 3),
            "kvcli_version": kvcli_version(), "defaults": defaults_id(job.command)}


def compute(job: Job, trace: Trace) -> dict[str, Any]:
    """The job's JSON document, exactly as its command prints it with `--json`."""
    opts = job.replay_options()
    if job.command == "replay":
        from kvcore.engine.replay import replay

        return replay(job.trace, opts, trace=trace).to_dict()
    from kvcore.cluster.run import run_cluster

    return run_cluster(job.trace, opts, job.cluster_options(), trace=trace)


def strip_wall_times(result: dict[str, Any]) -> dict[str, Any]:
    """The result less its `wall_time_s` keys (the summary's and each router's)."""
    out = {k: v for k, v in result.items() if k != "wall_time_s"}
    if isinstance(out.get("routers"), list):
        out["routers"] = [{k: v for k, v in r.items() if k != "wall_time_s"}
                          for r in out["routers"]]
    return out


def _interrupted(result: dict[str, Any]) -> bool:
    if result.get("interrupted"):
        return True
    return any(r.get("interrupted") for r in result.get("routers", ()))
