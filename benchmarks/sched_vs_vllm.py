"""kvcli's engine mode against vLLM 0.33.0's own `Scheduler` loop, side by side (a benchmark).

    .venv/bin/python benchmarks/sched_vs_vllm.py [--requests 2000] [--seed 1] [--async]
        [--oracle ../shared/oracle/tool/oracle] [--keep DIR] [--repeat 1]

Writes a token-id trace with vLLM's default scheduler settings (block 16, 128 seqs, 2,048
batched tokens, whole-prompt admission, chunked prefill, FCFS): a few shared system prompts,
multi-turn conversations whose next turn is the previous prompt plus its outputs (the oracle's
output tokens) plus a new message, outputs of 50-400 tokens, arrivals spread over steps. Then:

1. vLLM: `oracle sched TRACE` (the real Scheduler, or AsyncScheduler with --async); its time is
   the `loop_s` it prints (the step loop only: no import, no model inspection);
2. kvcli: `kvcli replay TRACE --arrivals step` as a whole process (start-up, reading, hashing
   and the replay), with `--no-async-scheduling` unless --async: on the pure-Python stack, and
   on the compiled build too when `make compiled` made a fresh one;

checks that the step lines are identical (scheduled in order, admitted hits, preempted,
finished, free blocks; async adds processed / schedule_called) and prints both times and the
ratio. With `--repeat N` each of the three runs N times, interleaved (vLLM, pure, compiled,
vLLM, ...) so that a shared machine's noise falls on all alike, and the ratio is of the medians
(single runs of either side vary by 20% or more on a 2-core machine). Needs the oracle environment (`../shared/oracle/tool/setup.sh`); a development tool,
never run by the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stack_status import stack_status  # beside this script

ROOT = Path(__file__).resolve().parents[1]
ORACLE = ROOT.parent / "shared" / "oracle" / "tool" / "oracle"
OUTPUT_BASE = 1_000_000            # the oracle's fake model: base + index*(max_model_len+1) + p
CONFIG = {"block_size": 16, "num_blocks": 8192, "max_num_seqs": 128,
          "max_num_batched_tokens": 2048, "max_model_len": 8192,
          "long_prefill_token_threshold": 0, "policy": "fcfs", "watermark": 0.0,
          "scheduler_reserve_full_isl": True, "enable_chunked_prefill": True}


def make_trace(n: int, seed: int, asyn: bool) -> tuple[dict, list[dict]]:
    """`n` requests: conversations on shared system prompts, each turn extending the last."""
    rng = random.Random(seed)
    cfg = dict(CONFIG, kv_events=False)
    if asyn:
        cfg["async_scheduling"] = True
    stride = cfg["max_model_len"] + 1
    systems = [[rng.randrange(1, 30000) for _ in range(rng.randrange(200, 800))]
               for _ in range(4)]
    reqs: list[dict] = []
    live: list[tuple[list[int], int, int]] = []      # (prompt, output tokens, file index)
    step = 0
    while len(reqs) < n:
        step += rng.randrange(0, 3)
        if live and rng.random() < 0.6:              # the next turn of a conversation
            prompt, out, idx = live.pop(rng.randrange(len(live)))
            prompt = prompt + [OUTPUT_BASE + idx * stride + p for p in range(out)]
        else:
            prompt = list(rng.choice(systems))
        prompt = prompt + [rng.randrange(1, 30000) for _ in range(rng.randrange(20, 300))]
        out = rng.randrange(50, 400)
        if len(prompt) + out >= cfg["max_model_len"] - 1:
            continue                                  # conversation too long: start anew
        idx = len(reqs)
        reqs.append({"id": f"r{idx}", "prompt_token_ids": prompt, "output_length": out,
                     "arrival_step": step})
        live.append((prompt, out, idx))
    return cfg, reqs


def run(cmd: list[str], env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                          env=None if env is None else {**os.environ, **env})
    return time.perf_counter() - t0, proc


def same_steps(ours: Path, theirs: Path, asyn: bool) -> tuple[bool, int]:
    keys = ["step", "scheduled", "admitted", "preempted", "finished", "num_free_blocks"]
    if asyn:
        keys += ["num_free_blocks_after_schedule", "processed", "schedule_called"]
    lines = [json.loads(x) for x in theirs.read_text().splitlines() if x.strip()][:-1]
    lines = [e for e in lines if not e.get("idle")]
    if not asyn:
        lines = [e for e in lines if e["scheduled"] or e["preempted"]]
    mine = [json.loads(x) for x in ours.read_text().splitlines()]

    def view(e: dict) -> tuple:
        return tuple((k, list(e[k].items()) if isinstance(e[k], dict) else e[k]) for k in keys)
    return [view(e) for e in mine] == [view(e) for e in lines], len(mine)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--async", dest="asyn", action="store_true")
    ap.add_argument("--oracle", default=str(ORACLE))
    ap.add_argument("--keep", help="write the trace and outputs here")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each side (medians)")
    args = ap.parse_args()
    if not Path(args.oracle).exists():
        print(f"no oracle at {args.oracle} (../shared/oracle/tool/setup.sh builds it)",
              file=sys.stderr)
        return 2
    folder = Path(args.keep or tempfile.mkdtemp(prefix="sched_vs_vllm."))
    folder.mkdir(parents=True, exist_ok=True)
    cfg, reqs = make_trace(args.requests, args.seed, args.asyn)
    trace = folder / "trace.jsonl"
    trace.write_text(json.dumps({"config": cfg}) + "\n"
                     + "".join(json.dumps(r) + "\n" for r in reqs))
    tokens = sum(len(r["prompt_token_ids"]) for r in reqs)
    print(f"trace: {len(reqs):,} requests, {tokens:,} prompt tokens, "
          f"{sum(r['output_length'] for r in reqs):,} output tokens ({trace})")

    vllm_out = folder / "vllm.jsonl"
    mode = "async" if args.asyn else "sync"
    # The pure-Python stack always; the compiled build too when there is a fresh one.
    stacks = [("pure Python", {"KVCLI_PURE": "1"})]
    status = stack_status(ROOT)
    if status == "compiled":
        stacks.append(("compiled", {"KVCLI_PURE": ""}))
    else:
        print(f"(no compiled run: the stack is {status})")
    loops: list[float] = []
    walls: dict[str, list[float]] = {name: [] for name, _ in stacks}
    all_same = True
    steps = {}
    for _ in range(max(1, args.repeat)):
        _, proc = run([args.oracle, "sched", str(trace), "-o", str(vllm_out), "--no-queues"])
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
            return 1
        timing = next(json.loads(x)["timing"] for x in proc.stderr.splitlines()
                      if x.startswith('{"timing"'))
        loops.append(timing["loop_s"])
        for name, env in stacks:
            ours_steps = folder / f"kvcli.{name.split()[0]}.steps.jsonl"
            kvcli = [str(ROOT / ".venv" / "bin" / "kvcli"), "replay", str(trace), "--arrivals",
                     "step", "--steps", str(ours_steps), "--json"]
            if not args.asyn:
                kvcli.append("--no-async-scheduling")
            wall, proc = run(kvcli, env)
            if proc.returncode != 0:
                print(proc.stderr[-2000:], file=sys.stderr)
                return 1
            same, n = same_steps(ours_steps, vllm_out, args.asyn)
            all_same = all_same and same
            walls[name].append(wall)
            steps[name] = (same, n)
    loop = statistics.median(loops)
    runs = "" if len(loops) == 1 else f", median of {len(loops)}: " + \
        " ".join(f"{x:.2f}" for x in loops)
    print(f"vLLM 0.33.0 {'AsyncScheduler' if args.asyn else 'Scheduler'} loop: "
          f"{loop:.2f} s ({timing['steps']:,} steps{runs})")
    for name, _ in stacks:
        wall = statistics.median(walls[name])
        runs = "" if len(loops) == 1 else f", median of {len(loops)}: " + \
            " ".join(f"{x:.2f}" for x in walls[name])
        same, n = steps[name]
        print(f"kvcli replay ({mode}, {name}), whole process: {wall:.2f} s ({n:,} step lines"
              f"{runs}), step lines identical: {same}, {loop / wall:.1f}x vLLM's loop")
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
