# ruff: noqa
"""Dev tool (not a test): ../sched_mamba_mixed/make_mamba_mixed.py's traces (Mamba groups in
"align" mode beside attention groups of other block sizes) with a `prefix_match_unit` finer than
every group's block, for ../sched_mamba_mixed/oracle_mamba_mixed.py.

    python3 tests/data/sched_mamba_mixed_pmu/make_mixed_pmu.py OUT_DIR FIRST LAST   # mpN
    python3 tests/data/sched_mamba_mixed_pmu/make_mixed_pmu.py OUT_DIR FIRST LAST --uniform   # muN

Seed N takes make_mamba_mixed.py's trace N and draws, from `random.Random(N * 7919 + 7)`: the
unit, a half or a quarter of the groups' gcd (at least 2), and half the time the first
attention group made a sliding window of 19, 32 or 64 tokens at its block (then, that block
not the unit, vLLM's partial hash hits are off; with full attention and Mamba groups only they
are on). `--uniform`: only the traces with a sliding window, every group at the config line's
block (the `block_size` keys dropped, the pool raised to what one max_model_len request needs
in full-attention blocks plus 2 where that is more).
"""

import importlib.util
import json
import math
import random
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "make_mamba_mixed", Path(__file__).resolve().parent.parent / "sched_mamba_mixed" / "make_mamba_mixed.py")
make_mamba_mixed = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_mamba_mixed)


def trace(seed: int) -> tuple[str, list[str]]:
    _, lines = make_mamba_mixed.trace(seed)
    rng = random.Random(seed * 7919 + 7)
    first = json.loads(lines[0])
    cfg = first["config"]
    bs = cfg["block_size"]
    gcd = math.gcd(*(g.get("block_size", bs) for g in cfg["groups"]))
    cfg["prefix_match_unit"] = max(2, gcd // rng.choice([2, 4]))
    if rng.random() < 0.5:
        i = next(i for i, g in enumerate(cfg["groups"]) if g["type"] != "mamba")
        g = {"type": "sliding_window", "sliding_window": rng.choice([19, 32, 64])}
        if "block_size" in cfg["groups"][i]:
            g["block_size"] = cfg["groups"][i]["block_size"]
        cfg["groups"][i] = g
    return "mp" + str(seed), [json.dumps(first), *lines[1:]]


def uniform(seed: int) -> tuple[str, list[str]] | None:
    _, lines = trace(seed)
    first = json.loads(lines[0])
    cfg = first["config"]
    if not any(g["type"] == "sliding_window" for g in cfg["groups"]):
        return None
    for g in cfg["groups"]:
        g.pop("block_size", None)
    bs, mml = cfg["block_size"], cfg["max_model_len"]
    need = sum((3 if g.get("checkpoint") else 2) if g["type"] == "mamba" else -(-mml // bs)
               for g in cfg["groups"])
    cfg["num_blocks"] = max(cfg["num_blocks"], need + 2)
    return "mu" + str(seed), [json.dumps(first), *lines[1:]]


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for seed in range(int(sys.argv[2]), int(sys.argv[3])):
        made = uniform(seed) if "--uniform" in sys.argv else trace(seed)
        if made is not None:
            (out / f"{made[0]}.trace.jsonl").write_text("\n".join(made[1]) + "\n")
