"""Replay speed and memory (a benchmark, not a test).

    .venv/bin/python benchmarks/replay_speed.py [TRACE] [--requests N] [--block-size 16]

Replays TRACE (default: the Mooncake conversation trace in tests/data) in engine mode at
block size 16 three ways, each in its own process so peak RSS is its own:
  1. no event stream (the baseline),
  2. our event stream written to a file (by a line thread on the compiled build, as
     `kvcli replay` writes it),
  3. the same with only the first quarter of the requests,
and reports wall time, CPU time, requests/s, blocks/s (blocks allocated + adopted as hits) and
peak RSS. Events are streamed, so (2) should not need more memory than (1), and (3) vs (2) shows
that memory does not grow with the number of events. Ratios are against run (1), measured in the
same invocation (the machine may be shared: compare ratios, not absolute seconds).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "tests" / "data" / "traces" / "mooncake" / "conversation_trace.jsonl.gz"

CHILD = r"""
import json, resource, sys, time, os
from kvcore.engine.replay import replay, ReplayOptions
from kvcore.engine.events import JsonlEvents
trace, events, bs = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0, c0 = time.perf_counter(), time.process_time()
blocks = [0]
if events == "-":
    s = replay(trace, ReplayOptions(block_size=bs))
    nbytes = 0
else:
    with open(events, "wb", buffering=1 << 20) as f:
        s = replay(trace, ReplayOptions(block_size=bs), JsonlEvents(f, line_thread=True))
    nbytes = os.path.getsize(events)
print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                  "requests": s.requests, "steps": s.steps, "events": s.events,
                  "event_bytes": nbytes, "prompt_tokens": s.prompt_tokens,
                  "hit_tokens": s.hit_tokens, "hit_rate": s.hit_rate,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(trace: str, events: str, bs: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, trace, events, str(bs)], check=True,
                         capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", nargs="?", default=str(DEFAULT))
    ap.add_argument("--requests", type=int, default=None, help="only the first N requests")
    ap.add_argument("--block-size", type=int, default=16)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(a.trace).read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        lines = raw.decode().splitlines()
        if a.requests:
            lines = lines[: a.requests]
        full = os.path.join(tmp, "trace.jsonl")
        Path(full).write_text("\n".join(lines) + "\n")
        quarter = os.path.join(tmp, "quarter.jsonl")
        Path(quarter).write_text("\n".join(lines[: max(1, len(lines) // 4)]) + "\n")
        ev = os.path.join(tmp, "events.jsonl")
        rows = {"no events": run(full, "-", a.block_size),
                "events to a file": run(full, ev, a.block_size)}
        os.unlink(ev)
        rows["events, first quarter"] = run(quarter, ev, a.block_size)
    base = rows["no events"]
    # blocks/s: prompt blocks handled (allocated or adopted) per second
    for name, r in rows.items():
        blocks = r["prompt_tokens"] // a.block_size
        print(f"{name:24s} wall {r['wall_s']:8.1f}s  cpu {r['cpu_s']:8.1f}s  "
              f"{r['requests'] / r['cpu_s']:8.1f} req/s  {blocks / r['cpu_s']:10.0f} blocks/s  "
              f"peak RSS {r['peak_rss_mb']:7.0f} MB  events {r['events']:>10,}  "
              f"cpu x{r['cpu_s'] / base['cpu_s']:.2f}")
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
