"""The CPU tier's cost (a benchmark, not a test): the same replay with and without
`--kv-offloading-size`, each in its own process, interleaved, the median of the runs.

    .venv/bin/python benchmarks/offload_speed.py [TRACE] [--requests 600] [--gib 32] [--runs 3]
        [--sync]

TRACE defaults to the Mooncake conversation trace (its first --requests requests), block size
16, 8,192 GPU blocks, the default (async) scheduling or --sync. Runs on whichever stack kvcore picks (the
compiled build when it is fresh: `make compiled`; KVCLI_PURE=1 for the pure-Python one) and prints
wall time, peak RSS, the tier's stores and evictions and the ratio with / without (the issue's
bound: 1.5).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONVERSATION = ROOT / "tests" / "data" / "traces" / "mooncake" / "conversation_trace.jsonl.gz"


def run(trace: str, extra: list[str], sync: bool) -> tuple[float, int, dict]:
    cmd = [sys.executable, "-m", "kvcli", "replay", trace, "--block-size", "16",
           "--num-blocks", "8192", "--json", *extra,
           *(["--no-async-scheduling"] if sync else [])]
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], capture_output=True, text=True,
                       cwd=ROOT, check=True)
    wall = time.perf_counter() - t0
    rss_kb = int(p.stderr.strip().splitlines()[-1])
    return wall, rss_kb, json.loads(p.stdout)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", nargs="?")
    ap.add_argument("--requests", type=int, default=600)
    ap.add_argument("--gib", type=float, default=32.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sync", action="store_true", help="synchronous scheduling")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trace = a.trace
        if trace is None:
            trace = str(Path(tmp) / "head.jsonl")
            with gzip.open(CONVERSATION, "rt") as f, open(trace, "w") as out:
                for i, line in enumerate(f):
                    if i >= a.requests:
                        break
                    out.write(line)
        times: dict[str, list[float]] = {"without": [], "with": []}
        last: dict[str, tuple[int, dict]] = {}
        for _ in range(a.runs):
            for name, extra in (("without", []), ("with", ["--kv-offloading-size", str(a.gib)])):
                wall, rss, summary = run(trace, extra, a.sync)
                times[name].append(wall)
                last[name] = (rss, summary)
    for name in ("without", "with"):
        rss, s = last[name]
        off = s.get("offload") or {}
        print(f"{name:8} median {statistics.median(times[name]):7.2f} s  peak RSS "
              f"{rss / 1024:6.0f} MB  hit rate {off.get('hit_rate_with_cpu', s['hit_rate']):.4f}"
              + (f"  stored {off['chunks_stored']:,} chunks, evicted {off['cpu_evictions']:,}"
                 if off else ""))
    ratio = statistics.median(times["with"]) / statistics.median(times["without"])
    print(f"ratio with / without: {ratio:.2f} (runs {times})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
