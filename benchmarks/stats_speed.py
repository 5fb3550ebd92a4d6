"""`kvcli stats` speed and memory, old code against new (a benchmark, not a test).

    .venv/bin/python benchmarks/stats_speed.py EVENTS [--old DIR] [--repeat 3] [--compiled]
                                               [--old-compiled]

EVENTS is an event stream (`kvcli replay TRACE --events EVENTS`). DIR is a checkout of the
code to compare with, e.g. `git worktree add /tmp/base-stats 9a158cb` (default: no
comparison, only this tree). Each run is its own process (`python -m kvcli stats EVENTS
--json`, KVCLI_PURE=1 (with ``--compiled``: not for this tree, which then uses its compiled
build, `compiled/build.py`, and its native stats kernel; the old tree stays pure unless
``--old-compiled``: then it too runs its own fresh build, e.g. a copy of this tree's
`compiled/lib` when the compiled modules did not change), PYTHONPATH
set to the tree, run from a scratch folder so that the
current directory does not shadow it), old and new interleaved, so that a shared machine's
noise falls on both alike. Prints each run's wall time, CPU time (user + system) and peak RSS,
the medians, their ratios, and whether the JSON documents are byte-identical; when they are not,
whether they are the same apart from top-level keys only one tree writes (a section added since,
e.g. `latency` against 9a158cb).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stack_status import require_compiled  # beside this script

ROOT = Path(__file__).resolve().parents[1]


def run_once(tree: Path, events: str, out: Path, pure: bool = True
             ) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one `kvcli stats --json` in a child
    process (``pure``: with KVCLI_PURE=1)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "KVCLI_PURE": "1" if pure else ""}
    t0 = time.perf_counter()
    with out.open("wb") as f:
        child = subprocess.Popen([sys.executable, "-m", "kvcli", "stats", events, "--json"],
                                 env=env, stdout=f, cwd=out.parent)
        _, status, usage = os.wait4(child.pid, 0)     # this child's own rusage
    wall = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{tree}: kvcli stats exited with {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def same_but_added(a: bytes, b: bytes) -> list[str] | None:
    """The top-level keys only one document has, when the rest is equal; else None."""
    da, db = json.loads(a), json.loads(b)
    extra = sorted(set(da) ^ set(db))
    common = set(da) & set(db)
    return extra if all(da[k] == db[k] for k in common) else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("events")
    ap.add_argument("--old", type=Path, help="a checkout of the code to compare with")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--compiled", action="store_true",
                    help="run this tree with its compiled build (it must be fresh)")
    ap.add_argument("--old-compiled", action="store_true",
                    help="run the old tree with its compiled build too (it must be fresh)")
    a = ap.parse_args()
    if a.compiled:
        require_compiled(ROOT)
    if a.old_compiled:
        if not a.old:
            ap.error("--old-compiled needs --old")
        require_compiled(a.old.resolve(), "--old-compiled")
    events = str(Path(a.events).resolve())
    trees = {"new": ROOT}
    if a.old:
        trees = {"old": a.old.resolve(), "new": ROOT}
    times: dict[str, list[float]] = {k: [] for k in trees}
    cpu: dict[str, list[float]] = {k: [] for k in trees}
    rss: dict[str, list[float]] = {k: [] for k in trees}
    with tempfile.TemporaryDirectory() as tmp:
        outs = {k: Path(tmp) / f"{k}.json" for k in trees}
        for i in range(a.repeat):
            for name, tree in trees.items():
                compiled = a.compiled if name == "new" else a.old_compiled
                wall, cpu_s, mb = run_once(tree, events, outs[name], pure=not compiled)
                times[name].append(wall)
                cpu[name].append(cpu_s)
                rss[name].append(mb)
                print(f"run {i + 1} {name}: {wall:7.2f} s wall, {cpu_s:7.2f} s CPU, "
                      f"peak RSS {mb:,.0f} MB", flush=True)
        med = {k: statistics.median(v) for k, v in times.items()}
        med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
        for k, v in med.items():
            print(f"median {k}: {v:.2f} s wall, {med_cpu[k]:.2f} s CPU, "
                  f"peak RSS {max(rss[k]):,.0f} MB")
        if "old" in med:
            a, b = outs["old"].read_bytes(), outs["new"].read_bytes()
            print(f"old / new: {med['old'] / med['new']:.2f}x wall, "
                  f"{med_cpu['old'] / med_cpu['new']:.2f}x CPU; JSON byte-identical: {a == b}")
            if a != b:
                extra = same_but_added(a, b)
                print("  the same apart from keys only one writes: " + ", ".join(extra)
                      if extra is not None else "  and they differ in common keys")


if __name__ == "__main__":
    main()
