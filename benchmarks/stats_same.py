"""`kvcli stats --json` of two code trees on a folder of event streams, byte for byte (a check,
not a test: the JSON of a stats change must not move).

    .venv/bin/python benchmarks/stats_same.py DIR --other TREE [--make] [--compiled] [EVENTS ...]

TREE is another checkout, e.g. `git worktree add /tmp/stats-ref main`. With ``--make``, DIR is
first filled with streams made by this tree's `kvcli replay` from the shipped samples
(traces/*.jsonl): engine mode (async, and --no-async-scheduling), cache mode, a warm-up,
preemption-heavy (few blocks), the CPU tier (--kv-offloading-size 1), the hybrid presets
(gemma-3-27b, gpt-oss-20b), a LoRA / cache-salt trace made from a sample, and malformed copies
of one stream (not JSON, a seq gap, truncated, a block out of range, a string hash, a bool
block). Then every `*.jsonl` in DIR, and each EVENTS given, goes through
`python -m kvcli stats S --json` with PYTHONPATH set to each tree (KVCLI_PURE=1; with
``--compiled``, this tree's stats run on its compiled build instead, native stats kernel
included; from a scratch folder): stdout, the last stderr line and the exit code must be the same. Exit status 1 when
one differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from stack_status import require_compiled  # beside this script

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ("multiturn-chat.jsonl", "shared-prefix.jsonl")
# (name, replay options): the shapes of stream the stats reader meets
VARIANTS = (
    ("engine", ["--block-size", "16", "--num-blocks", "2048"]),
    ("sync", ["--block-size", "16", "--num-blocks", "2048", "--no-async-scheduling"]),
    ("cache", ["--mode", "cache", "--block-size", "16", "--num-blocks", "2048"]),
    ("warmup", ["--block-size", "16", "--num-blocks", "2048", "--warmup", "0.3"]),
    ("preempt", ["--block-size", "16", "--num-blocks", "400", "--skip-bad"]),
    ("cpu", ["--block-size", "16", "--num-blocks", "1024", "--kv-offloading-size", "1"]),
    ("gemma", ["--model", "gemma-3-27b", "--gpu-memory-gib", "80"]),
    ("gptoss", ["--model", "gpt-oss-20b", "--gpu-memory-gib", "80"]),
)


def kvcli(tree: Path, args: list[str], cwd: str, pure: bool = True
          ) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree), "KVCLI_PURE": "1" if pure else ""}
    return subprocess.run([sys.executable, "-m", "kvcli", *args], env=env, cwd=cwd,
                          capture_output=True, check=False)  # the exit code is compared


def domain_trace(sample: Path, out: Path) -> Path:
    """The sample with a LoRA adapter on every third request and a cache salt on every fifth."""
    lines = sample.read_text().splitlines()
    with out.open("w") as f:
        for i, line in enumerate(lines):
            req = json.loads(line)
            if i % 3 == 1:
                req["lora"] = "sql"
            if i % 5 == 2:
                req["cache_salt"] = "x"
            f.write(json.dumps(req) + "\n")
    return out


def broken_copies(stream: Path, folder: Path) -> None:
    """Malformed copies of ``stream``: each must give the same one-line error."""
    lines = stream.read_bytes().splitlines(keepends=True)
    n = len(lines)
    mid = n // 2

    def edit(name: str, new: list[bytes]) -> None:
        (folder / f"bad_{name}.jsonl").write_bytes(b"".join(new))

    edit("not_json", lines[:mid] + [b"{oops\n"] + lines[mid + 1:])
    edit("seq_gap", lines[:mid] + lines[mid + 1:])
    edit("truncated", lines[:mid])
    for name, kind, old, new in (
            ("block_range", b'"kind":"cache"', b'"blocks":[', b'"blocks":[999999,'),
            ("hash_str", b'"kind":"evict"', b'"hashes":[', b'"hashes":["x",'),
            ("bool_block", b'"kind":"allocate"', b'"blocks":[', b'"blocks":[true,')):
        at = next(i for i in range(mid, n) if kind in lines[i])
        edit(name, lines[:at] + [lines[at].replace(old, new, 1)] + lines[at + 1:])


def make(folder: Path, scratch: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    traces = [ROOT / "traces" / s for s in SAMPLES]
    traces.append(domain_trace(traces[0], Path(scratch) / "domains.jsonl"))
    for trace in traces:
        for name, opts in VARIANTS:
            out = folder / f"{trace.stem}.{name}.jsonl"
            r = kvcli(ROOT, ["replay", str(trace), *opts, "--events", str(out)], scratch)
            if r.returncode:
                raise SystemExit(f"replay {trace.name} {name}: {r.stderr.decode()[-300:]}")
            print(f"made {out.name} ({out.stat().st_size:,} bytes)", flush=True)
    broken_copies(folder / "shared-prefix.engine.jsonl", folder)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("events", nargs="*", type=Path)
    ap.add_argument("--other", type=Path, required=True, help="the code tree to compare with")
    ap.add_argument("--make", action="store_true", help="first write the streams into DIR")
    ap.add_argument("--compiled", action="store_true",
                    help="run this tree's stats on its compiled build (it must be fresh)")
    a = ap.parse_args()
    if a.compiled:
        require_compiled(ROOT)
    bad = 0
    with tempfile.TemporaryDirectory() as scratch:
        if a.make:
            make(a.folder, scratch)
        streams = sorted(a.folder.glob("*.jsonl")) + a.events
        for s in streams:
            args = ["stats", str(s.resolve()), "--json"]
            mine = kvcli(ROOT, args, scratch, pure=not a.compiled)
            other = kvcli(a.other.resolve(), args, scratch)
            last = [r.stderr.decode().strip().splitlines()[-1:] for r in (mine, other)]
            same = (mine.returncode, mine.stdout, last[0]) == (other.returncode, other.stdout,
                                                               last[1])
            bad += not same
            what = f"exit {mine.returncode}" + (f": {last[0][0][:90]}" if mine.returncode else
                                               f", {len(mine.stdout):,} bytes of JSON")
            print(f"{'same' if same else 'DIFFERENT'}  {s.name}  ({what})", flush=True)
    print(f"{len(streams) - bad} of {len(streams)} streams give the same output")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
