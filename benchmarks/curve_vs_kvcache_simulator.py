"""Speed of `kvcli curve` against kvcache-simulator's C++ backend, side by side in one run.

    .venv/bin/python benchmarks/curve_vs_kvcache_simulator.py [TRACE] [--repeats 5]

kvcli:  the full LRU curve (every capacity at once; the default 24-point table, the ceiling and
        the knees) of TRACE: `kvcli curve TRACE --rule trace --warmup 0.5 --block-size 512 --json`.
kvcache-simulator (PyPI, installed into a throwaway venv here, never a project dependency; its
        C++ backend compiled once before timing): 5 capacities x 3 policies (fifo, lru,
        optimal), the same trace and convention (512-token blocks, last 50% measured):
        `kvcache-simulator run --budgets-gib ... --policies fifo,lru,optimal --format json`.
        Budgets are llama-3.1-8b GiB that give exactly 6, 64, 640, 6,400 and 64,000 blocks.

Both are timed as whole processes (start-up, reading, output), alternating, `--repeats` times
each; the medians of wall time and of CPU time (user + system: steadier on a busy machine)
and their ratios are printed, with the LRU hit rates of both at the 5
capacities (they must agree to 4 decimals: same convention).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = ROOT.parent / "shared" / "traces" / "mooncake" / "conversation_trace.jsonl"
CAPACITIES = [6, 64, 640, 6400, 64000]
BLOCK_GIB = 64 / 1024       # llama-3.1-8b: 128 KiB a token x 512 tokens = 64 MiB a block


def timed(cmd: list[str]) -> tuple[float, bytes, float]:
    """Wall seconds, stdout, and CPU seconds (user + system) of the child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True).stdout
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, out, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", default=str(DEFAULT_TRACE))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--venv", help="reuse a venv that has kvcache-simulator (default: a new "
                                   "temporary one)")
    a = ap.parse_args()

    tmp = tempfile.TemporaryDirectory(prefix="kvsim-bench-")
    venv = Path(a.venv) if a.venv else Path(tmp.name) / "venv"
    if not (venv / "bin" / "kvcache-simulator").exists():
        print(f"installing kvcache-simulator into {venv} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "kvcache-simulator"],
                       check=True)
    budgets = ",".join(f"{c * BLOCK_GIB:g}" for c in CAPACITIES)
    kvsim = [str(venv / "bin" / "kvcache-simulator"), "run", "--trace", a.trace, "--model",
             "llama-3.1-8b", "--block-size", "512", "--budgets-gib", budgets, "--policies",
             "fifo,lru,optimal", "--no-progress", "--format", "json"]
    kvcli = [str(Path(sys.executable).parent / "kvcli"), "curve", a.trace, "--rule", "trace",
             "--warmup", "0.5", "--block-size", "512", "--json"]
    kvcli_points = kvcli + ["--capacities", ",".join(map(str, CAPACITIES))]

    # Untimed first runs: compile the C++ backend, warm the file cache, check the answers.
    sim = json.loads(timed(kvsim)[1])   # the C++ backend compiles on its first run
    ours = json.loads(timed(kvcli_points)[1])
    sim_lru = {p["cacheBlocks"]: p["results"]["lru"]["hitRate"] for p in sim["points"]}
    our_lru = {p["capacity_blocks"]: p["hit_rate"] for p in ours["points"]}
    assert sorted(sim_lru) == CAPACITIES, sim_lru
    print("capacity  kvcache-simulator lru  kvcli lru")
    for c in CAPACITIES:
        print(f"{c:>8}  {sim_lru[c]:>21.4f}  {our_lru[c]:>9.4f}")
    print(f"ceiling   {sim['hitRateCeiling']:>21.4f}  {ours['ceiling']:>9.4f}")

    runs: dict[str, list[tuple[float, bytes, float]]] = {"kvcli": [], "kvsim": []}
    for _ in range(a.repeats):
        runs["kvcli"].append(timed(kvcli))
        runs["kvsim"].append(timed(kvsim))
    wall = {k: statistics.median(r[0] for r in v) for k, v in runs.items()}
    cpu = {k: statistics.median(r[2] for r in v) for k, v in runs.items()}
    for k, label in (("kvcli", "kvcli curve, full LRU curve (1 process)"),
                     ("kvsim", "kvcache-simulator C++, 5 capacities x 3 policies")):
        print(f"{label:<50} wall median {wall[k]:.3f} s  cpu median {cpu[k]:.3f} s  "
              f"walls {[round(r[0], 3) for r in runs[k]]}")
    print(f"ratio kvcache-simulator / kvcli: wall {wall['kvsim'] / wall['kvcli']:.2f}x, "
          f"cpu {cpu['kvsim'] / cpu['kvcli']:.2f}x")


if __name__ == "__main__":
    main()
