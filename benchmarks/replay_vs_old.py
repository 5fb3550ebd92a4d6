"""`kvcli replay` against an older checkout, side by side (a benchmark, not a test).

    .venv/bin/python benchmarks/replay_vs_old.py --old DIR [TRACE] [--requests N] [--repeat 2]
        [--async] [--no-events] [-- EXTRA REPLAY OPTIONS]

Issue 13's measure: the conversation trace (default) at block 16, 65,536 blocks, synchronous
scheduling (the code before that work had no async default), our event stream written to a
file. DIR is a checkout of the code to compare with, e.g.
`git worktree add --detach /tmp/base13 e782ce1^` (the commit before issue 13's work). Each run is
its own process (`python -m kvcli replay ... --json`, PYTHONPATH set to the tree, run from a
scratch folder): the old tree on its pure-Python stack (`--old-compiled`: on its own compiled
build, made there by `python compiled/build.py`), this tree on
whatever `kvcore.compiled.status()` says (the compiled build when `make compiled` made a fresh
one), old and new interleaved so that a shared machine's noise falls on both alike. Prints each
run's wall time, CPU time (user + system: steadier than wall time on a loaded machine) and peak
RSS, the medians and their ratios, and whether the event streams are byte-identical (their
header and last line left out: the header names the options, which grew since, and the last
line holds the wall time) and the summaries equal (wall time and keys the old code did not
have left out).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "tests" / "data" / "traces" / "mooncake" / "conversation_trace.jsonl.gz"


def run_once(tree: Path, args: list[str], scratch: Path, pure: bool) -> dict:
    """One `kvcli replay` in a child process: its times, peak RSS and summary."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    if pure:
        env["KVCLI_PURE"] = "1"
    out = scratch / "summary.json"
    with out.open("wb") as f:
        child = subprocess.Popen([sys.executable, "-m", "kvcli", "replay", *args, "--json"],
                                 env=env, stdout=f, stderr=subprocess.DEVNULL, cwd=scratch)
        _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{tree}: kvcli replay exited with {os.waitstatus_to_exitcode(status)}")
    summary = json.loads(out.read_text())
    return {"wall_s": summary["wall_time_s"], "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_mb": usage.ru_maxrss / 1024, "summary": summary}


def streams_match(old: Path, new: Path) -> tuple[bool, int]:
    """Whether the two event streams are the same line for line (header and last line left
    out), and how many lines needed a field-wise look: a line that differs in bytes matches
    when the new one only adds keys (`finish` gained latency fields after the old code)."""
    looked = 0
    with old.open("rb") as fo, new.open("rb") as fn:
        fo.readline(), fn.readline()
        a, b = fo.readline(), fn.readline()
        while a and b:
            na, nb = fo.readline(), fn.readline()
            if not na or not nb:            # a and b are the last lines: wall time
                return not na and not nb, looked
            if a != b:
                looked += 1
                oa, ob = json.loads(a), json.loads(b)
                if {k: ob.get(k) for k in oa} != oa:
                    return False, looked
            a, b = na, nb
    return not a and not b, looked


def comparable(summary: dict, keys: set[str]) -> dict:
    return {k: v for k, v in summary.items() if k in keys and k not in ("wall_time_s", "trace")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", nargs="?", default=str(DEFAULT))
    ap.add_argument("--old", type=Path, required=True, help="a checkout to compare with")
    ap.add_argument("--requests", type=int, help="only the first N requests")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--async", dest="asyn", action="store_true", help="async scheduling")
    ap.add_argument("--no-events", action="store_true", help="no event stream")
    ap.add_argument("--old-compiled", action="store_true",
                    help="the old tree on its own compiled build (its `compiled/build.py` run)")
    ap.add_argument("extra", nargs="*", help="more replay options (after --)")
    a = ap.parse_args()
    status = subprocess.run([sys.executable, "-c", "import kvcore.compiled as c; print(c.status())"],
                            capture_output=True, text=True, check=True, cwd=ROOT).stdout.strip()
    old_status = "pure Python"
    if a.old_compiled:
        old_status = subprocess.run(
            [sys.executable, "-c", "import kvcore.compiled as c; print(c.status())"],
            capture_output=True, text=True, check=True, cwd=a.old,
            env={**os.environ, "PYTHONPATH": str(a.old)}).stdout.strip()
        if not old_status.startswith("compiled"):
            raise SystemExit(f"--old-compiled: {a.old} is {old_status}")
    print(f"new: {ROOT} ({status}); old: {a.old} ({old_status})", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        trace = Path(a.trace).resolve()
        if a.requests:
            raw = trace.read_bytes()
            if raw[:2] == b"\x1f\x8b":
                raw = gzip.decompress(raw)
            trace = scratch / "trace.jsonl"
            trace.write_bytes(b"\n".join(raw.splitlines()[: a.requests]) + b"\n")
        runs: dict[str, list[dict]] = {"old": [], "new": []}
        for i in range(a.repeat):
            for name, tree in (("old", a.old.resolve()), ("new", ROOT)):
                args = [str(trace), "--block-size", "16", "--num-blocks", "65536", *a.extra]
                if not a.asyn:
                    args.append("--no-async-scheduling")
                if not a.no_events:
                    args += ["--events", str(scratch / f"{name}.events.jsonl")]
                r = run_once(tree, args, scratch, pure=name == "old" and not a.old_compiled)
                runs[name].append(r)
                print(f"run {i + 1} {name}: wall {r['wall_s']:7.2f} s  cpu {r['cpu_s']:7.2f} s  "
                      f"peak RSS {r['peak_rss_mb']:6.0f} MB", flush=True)
        med = {k: {m: statistics.median(r[m] for r in v) for m in ("wall_s", "cpu_s")}
               for k, v in runs.items()}
        for k, v in med.items():
            print(f"median {k}: wall {v['wall_s']:.2f} s, cpu {v['cpu_s']:.2f} s, peak RSS "
                  f"{max(r['peak_rss_mb'] for r in runs[k]):.0f} MB")
        print(f"old / new: wall {med['old']['wall_s'] / med['new']['wall_s']:.2f}x, "
              f"cpu {med['old']['cpu_s'] / med['new']['cpu_s']:.2f}x")
        old_s, new_s = runs["old"][-1]["summary"], runs["new"][-1]["summary"]
        keys = set(old_s) & set(new_s)
        same_summary = comparable(old_s, keys) == comparable(new_s, keys)
        print(f"summaries equal (keys both have, less wall time): {same_summary}")
        if not a.no_events:
            same, looked = streams_match(scratch / "old.events.jsonl",
                                         scratch / "new.events.jsonl")
            print(f"event streams equal line for line (less header and last line): {same} "
                  f"({looked:,} lines equal only with the new keys left out)")
            return 0 if same and same_summary else 1
        return 0 if same_summary else 1


if __name__ == "__main__":
    sys.exit(main())
