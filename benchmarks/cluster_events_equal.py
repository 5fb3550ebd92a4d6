"""`kvcli cluster` behind the event-fed routers, this tree against another checkout, byte for
byte (a check, not a test: it runs minutes).

    .venv/bin/python benchmarks/cluster_events_equal.py --before DIR [--after DIR]
        [--requests 1500] [--out DIR] [--reuse-before] [--pure] [--only NAME,...]

For each case (the shipped sample traces, the first N requests of the Mooncake conversation
trace, and variants that reach the event paths' corners: synchronous scheduling with its decode
fast-forward and a lag, cache mode, the CPU tier, a full + sliding-window model with sparse
retention) and every router that reads the event index, `kvcli cluster --json` runs twice per
tree: with `--events DIR --decisions FILE` (vLLM's events written: they must stay what they
were) and with `--decisions FILE` only (nothing but the index reads the events). Compared:

* each tree against the other: the JSON (wall times left out), the decisions, every event file;
* within each tree: the decisions and the JSON with and without `--events` (written events or
  not, the routers decide the same).

Each run is its own process (`python -m kvcli cluster`, PYTHONPATH set to the tree, run from a
scratch folder, `KVCLI_PURE=1` with `--pure`). Exit status 1 on any difference.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONVERSATION = ROOT / "tests" / "data" / "traces" / "mooncake" / "conversation_trace.jsonl.gz"
ROUTERS = "llmd_precise,dynamo"
HYBRID = {"config": {"groups": [{"type": "full"},
                                {"type": "sliding_window", "sliding_window": 64}]}}


def cases(scratch: Path, requests: int) -> dict[str, list[str]]:
    """name -> `kvcli cluster` arguments (the trace first)."""
    chat, prefix = str(ROOT / "traces" / "multiturn-chat.jsonl"), str(ROOT / "traces" /
                                                                      "shared-prefix.jsonl")
    conv = scratch / "conversation.jsonl"
    if not conv.exists():
        raw = gzip.decompress(CONVERSATION.read_bytes())
        conv.write_bytes(b"\n".join(raw.splitlines()[:requests]) + b"\n")
    hybrid = scratch / "hybrid-chat.jsonl"
    hybrid.write_bytes(json.dumps(HYBRID).encode() + b"\n" + Path(chat).read_bytes())
    return {
        "chat": [chat, "--replicas", "4", "--num-blocks", "512"],
        "prefix": [prefix, "--replicas", "4", "--num-blocks", "256"],
        "chat-sync-lag": [chat, "--replicas", "3", "--num-blocks", "512",
                          "--no-async-scheduling", "--kv-event-lag-ms", "20"],
        "chat-cache": [chat, "--replicas", "3", "--num-blocks", "400", "--mode", "cache"],
        "chat-cpu-tier": [chat, "--replicas", "3", "--num-blocks", "400",
                          "--kv-offloading-size-chunks", "200"],
        "hybrid-sparse": [str(hybrid), "--replicas", "3", "--num-blocks", "600",
                          "--prefix-cache-retention-interval", "0"],
        "conversation": [str(conv), "--replicas", "8", "--skip-bad"],
    }


def run(tree: Path, args: list[str], out: Path, files: bool, pure: bool) -> float:
    """One `kvcli cluster` into `out` (summary.json, decisions.jsonl, events/); its wall time."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("KVCLI_PURE", None)
    if pure:
        env["KVCLI_PURE"] = "1"
    cmd = [sys.executable, "-m", "kvcli", "cluster", *args, "--routers", ROUTERS, "--json",
           "--decisions", str(out / "decisions.jsonl")]
    if files:
        cmd += ["--events", str(out / "events")]
    t = time.perf_counter()
    with (out / "summary.json").open("wb") as f, (out / "stderr.txt").open("wb") as err:
        code = subprocess.run(cmd, env=env, stdout=f, stderr=err, cwd=out,
                              check=False).returncode
    if code:
        raise SystemExit(f"{tree}: exit {code}: {' '.join(cmd)}\n"
                         f"{(out / 'stderr.txt').read_text()[-2000:]}")
    return time.perf_counter() - t


def timeless(obj):
    """The JSON without its wall times (the only thing two equal runs may differ in)."""
    if isinstance(obj, dict):
        return {k: timeless(v) for k, v in obj.items() if "wall" not in k}
    if isinstance(obj, list):
        return [timeless(v) for v in obj]
    return obj


def same_files(a: Path, b: Path) -> list[str]:
    """The differences between two run folders (JSON, decisions, event files)."""
    bad = []
    if timeless(json.loads((a / "summary.json").read_bytes())) != \
            timeless(json.loads((b / "summary.json").read_bytes())):
        bad.append("summary.json")
    if (a / "decisions.jsonl").read_bytes() != (b / "decisions.jsonl").read_bytes():
        bad.append("decisions.jsonl")
    ea, eb = a / "events", b / "events"
    names = sorted({p.relative_to(ea) for p in ea.rglob("*") if p.is_file()}
                   | {p.relative_to(eb) for p in eb.rglob("*") if p.is_file()}) \
        if ea.exists() or eb.exists() else []
    for rel in names:
        pa, pb = ea / rel, eb / rel
        if not (pa.exists() and pb.exists()):
            bad.append(f"events/{rel} (missing)")
            continue
        la, lb = pa.read_bytes().splitlines(), pb.read_bytes().splitlines()
        if rel.name.endswith(".events.jsonl") and la and lb:    # our `end` line: wall time
            la[-1:] = [json.dumps(timeless(json.loads(la[-1])), sort_keys=True).encode()]
            lb[-1:] = [json.dumps(timeless(json.loads(lb[-1])), sort_keys=True).encode()]
        if la != lb:
            bad.append(f"events/{rel}")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the checkout to compare with")
    ap.add_argument("--after", type=Path, default=ROOT)
    ap.add_argument("--requests", type=int, default=1500, help="conversation requests")
    ap.add_argument("--out", type=Path, default=Path("/tmp/cluster_events_equal"))
    ap.add_argument("--reuse-before", action="store_true", help="keep the before tree's runs")
    ap.add_argument("--pure", action="store_true", help="both trees on the pure stack")
    ap.add_argument("--only", help="these cases only (comma-separated names)")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    todo = cases(a.out, a.requests)
    if a.only:
        todo = {k: v for k, v in todo.items() if k in a.only.split(",")}
    failed = 0
    for name, args in todo.items():
        times = {}
        for side, tree in (("before", a.before.resolve()), ("after", a.after.resolve())):
            for files in (True, False):
                out = a.out / side / name / ("files" if files else "index")
                if side == "before" and a.reuse_before and (out / "summary.json").exists():
                    continue
                times[f"{side} {'files' if files else 'index'}"] = run(tree, args, out, files,
                                                                       a.pure)
        bad = []
        for kind in ("files", "index"):
            bad += [f"{kind}: {x}" for x in same_files(a.out / "before" / name / kind,
                                                       a.out / "after" / name / kind)]
        for side in ("before", "after"):
            d = a.out / side / name
            if (d / "files" / "decisions.jsonl").read_bytes() != \
                    (d / "index" / "decisions.jsonl").read_bytes() or \
                    timeless(json.loads((d / "files" / "summary.json").read_bytes())) != \
                    timeless(json.loads((d / "index" / "summary.json").read_bytes())):
                bad.append(f"{side}: with and without --events differ")
        took = ", ".join(f"{k} {v:.1f} s" for k, v in times.items())
        print(f"{name:>14}: {'SAME' if not bad else 'DIFFERENT ' + '; '.join(bad)}  ({took})",
              flush=True)
        failed += bool(bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
