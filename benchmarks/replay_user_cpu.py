"""`kvcli replay` of two trees, same build kind, interleaved: user CPU time (a benchmark, not a test).

    .venv/bin/python benchmarks/replay_user_cpu.py --old DIR [--new DIR] [--requests N]
        [--repeat 3] [--compiled] [-- EXTRA REPLAY OPTIONS]

For a change measured against the code before it on a shared machine: both trees on the
pure-Python stack (or, with ``--compiled``, each on its own compiled build, made there by
`compiled/build.py`; refused when a tree's build does not match its sources), the first N
requests of the conversation trace (default 3,000), old and new runs interleaved, each its own
process. Prints each run's user CPU time (ru_utime: what other sessions' load moves least; it
includes the replay's helper threads) and wall time, the medians and the ratio old / new, and
whether every output (the summary less its wall time, the step lines, the request lines and the
event stream: ``--events FMT`` for jsonl or vllm) is the same bytes in every run.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "tests" / "data" / "traces" / "mooncake" / "conversation_trace.jsonl.gz"


def run_once(tree: Path, args: list[str], scratch: Path, compiled: bool) -> tuple[float, float,
                                                                                  str]:
    """(user CPU s, wall s, a digest of every output) of one replay in a child process."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("KVCLI_PURE", None)
    if not compiled:
        env["KVCLI_PURE"] = "1"
    with (scratch / "summary.json").open("wb") as f:
        child = subprocess.Popen([sys.executable, "-m", "kvcli", "replay", *args, "--json"],
                                 env=env, stdout=f, stderr=subprocess.DEVNULL, cwd=scratch)
        _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{tree}: kvcli replay exited with {os.waitstatus_to_exitcode(status)}")
    summary = json.loads((scratch / "summary.json").read_text())
    wall = summary.pop("wall_time_s")
    digest = hashlib.sha256(json.dumps(summary, sort_keys=True).encode())
    for name in ("steps.jsonl", "requests.jsonl", "events.jsonl"):
        path = scratch / name
        if path.exists():
            # (the event stream's end line holds the summary: its wall time differs)
            digest.update(re.sub(rb'"wall_time_s":[0-9.e+-]+', b"", path.read_bytes()))
            path.unlink()
    return usage.ru_utime, wall, digest.hexdigest()


def build_status(tree: Path) -> str:
    return subprocess.run([sys.executable, "-c", "import kvcore.compiled as c; print(c.status())"],
                          capture_output=True, text=True, check=True, cwd=tree,
                          env={**os.environ, "PYTHONPATH": str(tree)}).stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, required=True, help="a checkout to compare with")
    ap.add_argument("--new", type=Path, default=ROOT, help="the checkout measured (this one)")
    ap.add_argument("--trace", type=Path, default=DEFAULT)
    ap.add_argument("--requests", type=int, default=3000, help="only the first N requests")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--compiled", action="store_true", help="each tree's compiled build")
    ap.add_argument("--outputs", action="store_true",
                    help="write step lines, request lines and events too (and compare them)")
    ap.add_argument("--events", default="jsonl", choices=["jsonl", "vllm"])
    ap.add_argument("extra", nargs="*", help="more replay options (after --)")
    a = ap.parse_args()
    trees = {"old": a.old.resolve(), "new": a.new.resolve()}
    if a.compiled:
        for name, tree in trees.items():
            if not build_status(tree).startswith("compiled"):
                raise SystemExit(f"--compiled: {tree} is {build_status(tree)}")
    print(f"new: {trees['new']}; old: {trees['old']}; "
          f"{'compiled' if a.compiled else 'pure Python'}; {' '.join(a.extra)}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        raw = a.trace.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        trace = scratch / "trace.jsonl"
        trace.write_bytes(b"\n".join(raw.splitlines()[: a.requests]) + b"\n")
        args = [str(trace), *a.extra]
        if a.outputs:
            args += ["--steps", "steps.jsonl", "--requests", "requests.jsonl",
                     "--events", "events.jsonl", "--events-format", a.events]
        user: dict[str, list[float]] = {"old": [], "new": []}
        digests = set()
        for i in range(a.repeat):
            for name, tree in trees.items():
                u, wall, digest = run_once(tree, args, scratch, a.compiled)
                user[name].append(u)
                digests.add(digest)
                print(f"run {i + 1} {name}: user {u:6.2f} s  wall {wall:6.2f} s", flush=True)
        med = {k: statistics.median(v) for k, v in user.items()}
        print(f"median user CPU: old {med['old']:.2f} s, new {med['new']:.2f} s: "
              f"old / new {med['old'] / med['new']:.2f}x")
        print(f"outputs the same bytes in every run: {len(digests) == 1}")
        return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
