"""`kvcli sweep` on the local executor against the same jobs one after another (a benchmark).

    .venv/bin/python benchmarks/sweep_speed.py [TRACE] [--requests N] [--jobs J] [--ray]

The grid of issue 17: the Mooncake conversation trace (default: tests/data's copy), 3
capacities x 2 CPU-tier eviction policies x 2 block sizes x 2 CPU-tier sizes = 24 engine-mode
replays. `--requests N` keeps the trace's first N requests (default 1000: one job then takes
5-15 s here instead of about a minute, so the whole benchmark fits in a few minutes; 0 keeps
them all). In one invocation it measures:
  1. sequential: the 24 jobs one after another in this process, each the same pure call
     (`kvcore.sweep.job.compute`) `kvcli replay` makes, without even a process start per job;
  2. `kvcli sweep --jobs J` (default: the cores) as a command: worker start-up, the trace sent
     to each worker, results appended and synced, the table;
  3. with `--ray`, `kvcli sweep --executor ray` on a local Ray it starts (start-up included).
and reports each one's wall time and its ratio to (1), and checks that every job's result is
the same in all of them. The machine may be shared: compare ratios measured together.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT = ROOT / "tests" / "data" / "traces" / "mooncake" / "conversation_trace.jsonl.gz"
GRID = ["num_blocks=8192,16384,32768", "eviction_policy=lru,arc", "block_size=16,32",
        "kv_offloading_size=2,8"]


def _prefix(src: Path, n: int, dst: Path) -> None:
    opener = gzip.open if src.suffix == ".gz" else open
    with opener(src, "rt") as f, open(dst, "w") as out:
        for i, line in enumerate(f):
            if n and i >= n:
                break
            out.write(line)


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _sweep(trace: Path, results: Path, extra: list[str]) -> tuple[float, float, list[dict]]:
    """(wall s, CPU s of the command and its workers, the jobs). Ray's workers are not the
    command's children: their CPU time is not counted."""
    cmd = [sys.executable, "-m", "kvcli", "sweep", "--trace", str(trace),
           *(x for s in GRID for x in ("--set", s)), "--results", str(results), "--json", *extra]
    c0, t0 = _children_cpu(), time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, check=False,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if r.returncode != 0:
        sys.exit(f"kvcli sweep failed ({r.returncode}): {r.stderr.decode()[-2000:]}")
    return wall, cpu, json.loads(r.stdout)["jobs"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", default=str(DEFAULT))
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--ray", action="store_true", help="also the ray executor (local Ray)")
    args = ap.parse_args()

    from kvcore.sweep.job import compute, strip_wall_times
    from kvcore.sweep.run import plan_sweep

    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "conversation.jsonl"
        _prefix(Path(args.trace), args.requests, trace)
        plan = plan_sweep(None, traces=[str(trace)], sets=GRID)
        tr = plan.traces[plan.jobs[0].trace_sha256]
        print(f"{len(plan.jobs)} jobs on {len(tr.requests):,} requests of {args.trace}; "
              f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}", flush=True)

        c0, t0 = time.process_time(), time.perf_counter()
        seq = {}
        for job in plan.jobs:
            seq[job.job_id] = strip_wall_times(compute(job, tr))
        t_seq, c_seq = time.perf_counter() - t0, time.process_time() - c0
        print(f"sequential (in-process):        {t_seq:8.1f} s   CPU {c_seq:7.1f} s "
              f"({c_seq / t_seq:.2f} cores busy)", flush=True)

        t_loc, c_loc, jobs = _sweep(trace, Path(tmp) / "local.jsonl",
                                    ["--jobs", str(args.jobs)])
        assert all(j["result"] == seq[j["job_id"]] for j in jobs), "local results differ"
        print(f"kvcli sweep --jobs {args.jobs} (local):  {t_loc:8.1f} s   CPU {c_loc:7.1f} s "
              f"({c_loc / t_loc:.2f} cores busy)   {t_loc / t_seq:.2f}x the sequential time",
              flush=True)
        if args.ray:
            t_ray, _, jobs = _sweep(trace, Path(tmp) / "ray.jsonl", ["--executor", "ray"])
            assert all(j["result"] == seq[j["job_id"]] for j in jobs), "ray results differ"
            print(f"kvcli sweep --executor ray:     {t_ray:8.1f} s   "
                  f"{t_ray / t_seq:.2f}x the sequential time (Ray's start included)")
        print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
