# ruff: noqa
"""Dev tool (not a test): random scheduler traces, without drafts or Mamba groups, over
full-attention and sliding-window groups with a config line's `prefix_match_unit` (vLLM's
`--prefix-match-unit`) at or below the groups' gcd, for oracle_mixed_pmu.py (this folder).

    python3 tests/data/sched_mixed_pmu/make_mixed_pmu.py OUT_DIR FIRST LAST   # seeds FIRST..LAST-1

Seed N writes `xpN.trace.jsonl`. Each draws, from `random.Random(N)`: a base block B (8 or 16);
two or three groups, full attention or sliding windows (19, 32 or 64 tokens; at least one
sliding window), each at B, 2B or 4B (one block size for all 1 in 4); the unit the gcd of
their blocks (1 in 2), or a half or a quarter of it (at least 2); prefix caching on 7 in 8
(off, vLLM ignores the unit); sync or async; max_model_len 256 or 384; a pool from what one
max_model_len request needs (every group counted whole) to 40 blocks more, small 1 in 2
(preemptions); the knobs of ../sched_spec_mamba/make_spec_mamba.py's `base_config` and its
requests over the groups' lcm.
"""

import importlib.util
import json
import math
import random
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "make_spec_mamba", Path(__file__).resolve().parent.parent / "sched_spec_mamba" / "make_spec_mamba.py")
make_spec_mamba = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_spec_mamba)


def trace(seed: int) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    b = rng.choice([8, 16])
    n = rng.choice([2, 3])
    uniform = rng.random() < 0.25
    sizes = [b if uniform else rng.choice([b, 2 * b, 4 * b]) for _ in range(n)]
    groups = []
    for size in sizes:
        if rng.random() < 0.5:
            groups.append({"type": "full", "block_size": size})
        else:
            groups.append({"type": "sliding_window", "sliding_window": rng.choice([19, 32, 64]),
                           "block_size": size})
    if not any(g["type"] == "sliding_window" for g in groups):
        groups[rng.randrange(n)] = {"type": "sliding_window", "sliding_window": 32,
                                    "block_size": sizes[0]}
        groups[-1]["block_size"] = sizes[-1]
    sizes = [g["block_size"] for g in groups]
    gcd, lcm = math.gcd(*sizes), math.lcm(*sizes)
    unit = gcd if rng.random() < 0.5 else max(2, gcd // rng.choice([2, 4]))
    caching = rng.random() < 0.875
    mml = rng.choice([256, 384])
    need = sum(-(-mml // s) for s in sizes)
    small = rng.random() < 0.5
    pool = need + 1 + (rng.choice([0, 1, 3]) if small else rng.choice([10, 20, 40]))
    cfg = {**make_spec_mamba.base_config(rng, b, pool, mml, groups, caching),
           "async_scheduling": rng.random() < 0.5, "prefix_match_unit": unit}
    lines = [json.dumps({"config": cfg}), *make_spec_mamba.requests(rng, lcm, mml, 0.35)]
    return "xp" + str(seed), lines


if __name__ == "__main__":
    make_spec_mamba.write_traces(trace, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
