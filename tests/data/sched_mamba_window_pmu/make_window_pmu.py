# ruff: noqa
"""Dev tool (not a test): ../sched_mamba_mixed/make_mamba_mixed.py's traces (Mamba groups in
"align" mode beside attention groups of other block sizes) with a `prefix_match_unit` finer than
the Mamba block and a sliding-window group AT the unit, so that vLLM's partial hash hits stay
on beside it, for ../sched_mamba_mixed_pmu/with_unit.py.

    python3 tests/data/sched_mamba_window_pmu/make_window_pmu.py OUT_DIR FIRST LAST   # mwN
    python3 tests/data/sched_mamba_window_pmu/make_window_pmu.py OUT_DIR FIRST LAST --chunked  # mcN

Seed N takes make_mamba_mixed.py's trace N and draws, from `random.Random(N * 7919 + 11)`: the
unit, the groups' gcd or a half or a quarter of it, below the Mamba block B and at least 2;
the first attention group made a sliding window of 19, 32 or 64 tokens at the unit's block (1
in 2 a new group inserted there instead); the pool raised by the window group's blocks for one
max_model_len request counted whole (the other groups keep their spare). `--chunked`: trace
mwN with its first sliding window at the unit made a chunked local group at the unit (a chunk
of 2, 4 or 8 units, from `random.Random(N)`), for with_chunked.py (this folder).
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
    rng = random.Random(seed * 7919 + 11)
    first = json.loads(lines[0])
    cfg = first["config"]
    bs, mml = cfg["block_size"], cfg["max_model_len"]
    gcd = math.gcd(*(g.get("block_size", bs) for g in cfg["groups"]))
    units = [u for u in (gcd, gcd // 2, gcd // 4) if 2 <= u < bs]
    unit = rng.choice(units or [max(2, bs // 2)])
    cfg["prefix_match_unit"] = unit
    window = {"type": "sliding_window", "sliding_window": rng.choice([19, 32, 64]),
              "block_size": unit}
    i = next(i for i, g in enumerate(cfg["groups"]) if g["type"] != "mamba")
    if rng.random() < 0.5:
        old = cfg["groups"][i].get("block_size", bs)
        cfg["num_blocks"] -= -(-mml // old)
        cfg["groups"][i] = window
    else:
        cfg["groups"].insert(rng.randrange(len(cfg["groups"]) + 1), window)
    cfg["num_blocks"] += -(-mml // unit)
    return "mw" + str(seed), [json.dumps(first), *lines[1:]]


def chunked(seed: int) -> tuple[str, list[str]]:
    _, lines = trace(seed)
    first = json.loads(lines[0])
    cfg = first["config"]
    rng = random.Random(seed)
    unit = cfg["prefix_match_unit"]
    i = next(i for i, g in enumerate(cfg["groups"])
             if g["type"] == "sliding_window" and g.get("block_size") == unit)
    cfg["groups"][i] = {"type": "chunked_local",
                        "attention_chunk_size": unit * rng.choice([2, 4, 8]), "block_size": unit}
    return "mc" + str(seed), [json.dumps(first), *lines[1:]]


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for seed in range(int(sys.argv[2]), int(sys.argv[3])):
        name, made = chunked(seed) if "--chunked" in sys.argv else trace(seed)
        (out / f"{name}.trace.jsonl").write_text("\n".join(made) + "\n")
