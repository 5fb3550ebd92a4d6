"""`kvcli cluster` against one replay: 8 replicas on the Mooncake conversation trace.

Issue 16's bar: 8 replicas (block 16, each the default 16,384-block engine, async scheduling)
finish in at most 2x the time of one replica's replay of the whole trace. Runs, interleaved,
`replay()` of the trace and `run_cluster()` with each router given, and prints the wall times
(medians) and the ratios to the replay measured in the same run.

    .venv/bin/python benchmarks/cluster_speed.py [TRACE] [--replicas 8] [--routers a,b]
        [--repeat 1] [--head N]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from kvcore.cluster.run import ClusterOptions, run_cluster
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.traces import read_trace

DEFAULT = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "traces", "mooncake",
                       "conversation_trace.jsonl")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", nargs="?", default=DEFAULT)
    ap.add_argument("--replicas", type=int, default=8)
    ap.add_argument("--routers", default="round_robin")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--head", type=int, default=0, help="only the first N lines")
    a = ap.parse_args()
    path = a.trace
    if a.head:
        with open(path, "rb") as f:
            lines = list(itertools.islice(f, a.head))
        with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as tmp:
            tmp.write(b"".join(lines))
        path = tmp.name
    trace = read_trace(path)
    opts = ReplayOptions(skip_bad=True)
    times: dict[str, list[float]] = {"replay": []}
    for _ in range(a.repeat):
        t = time.perf_counter()
        replay(path, opts, trace=trace)
        times["replay"].append(time.perf_counter() - t)
        for name in a.routers.split(","):
            t = time.perf_counter()
            run_cluster(path, opts, ClusterOptions(replicas=a.replicas, routers=((name, ()),)),
                        trace=trace)
            times.setdefault(name, []).append(time.perf_counter() - t)
    base = statistics.median(times["replay"])
    print(f"{len(trace.requests):,} requests, {a.replicas} replicas")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"{name:>14}: {m:7.2f} s  ({m / base:.2f}x the replay)")


if __name__ == "__main__":
    main()
