# ruff: noqa
"""Dev tool (not a test): random scheduler traces, without drafts or Mamba groups, with a
chunked local attention group beside full-attention or sliding-window groups of other block
sizes and a config line's `prefix_match_unit` (vLLM's `--prefix-match-unit`) at or below the
groups' gcd, for ../sched_mixed_pmu/oracle_mixed_pmu.py.

    python3 tests/data/sched_chunked_pmu/make_chunked_pmu.py OUT_DIR FIRST LAST   # seeds FIRST..LAST-1

Seed N writes `cuN.trace.jsonl`: ../sched_chunked_mixed/make_chunked_mixed.py's layouts
(`sizes`: the chunked group's block the finest, between, the lcm, or 2B / 3B / 6B), drawn from
`random.Random(N)` with its shapes weighted to the lcm (4 in 5), then the unit: the groups'
gcd 1 in 3, else a half or a quarter of it (at least 2); prefix caching on 7 in 8; the rest as
there (sync or async, max_model_len 256 or 384, a pool from one max_model_len request's need to
40 blocks more, small 1 in 2, ../sched_spec_mamba/make_spec_mamba.py's knobs and requests).
"""

import importlib.util
import json
import math
import random
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


make_spec_mamba = _load("make_spec_mamba", DATA / "sched_spec_mamba" / "make_spec_mamba.py")
mixed = _load("make_chunked_mixed", DATA / "sched_chunked_mixed" / "make_chunked_mixed.py")


def trace(seed: int) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    b = rng.choice([8, 16])
    while True:
        shape, chunked_bs, others = mixed.sizes(rng, b)
        at_lcm = chunked_bs == math.lcm(chunked_bs, *others)
        if at_lcm or rng.random() < 0.2:
            break
    caching = rng.random() < 0.875
    mml = rng.choice([256, 384])
    chunk = chunked_bs * rng.choice([1, 2, 4])
    groups = [{"type": "full", "block_size": s} for s in others]
    if rng.random() < 0.4:
        i = rng.randrange(len(groups))
        groups[i] = {"type": "sliding_window", "sliding_window": rng.choice([19, 32, 64]),
                     "block_size": others[i]}
    if not any(g["type"] == "full" for g in groups) and rng.random() < 0.5:
        groups.insert(0, {"type": "full", "block_size": others[0]})
    groups.insert(rng.randrange(len(groups) + 1),
                  {"type": "chunked_local", "attention_chunk_size": chunk,
                   "block_size": chunked_bs})
    sizes = [g["block_size"] for g in groups]
    gcd, lcm = math.gcd(*sizes), math.lcm(*sizes)
    unit = gcd if rng.random() < 1 / 3 else max(2, gcd // rng.choice([2, 4]))
    need = sum(-(-mml // s) for s in sizes)
    small = rng.random() < 0.5
    pool = need + 1 + (rng.choice([0, 1, 3]) if small else rng.choice([10, 20, 40]))
    cfg = {**make_spec_mamba.base_config(rng, b, pool, mml, groups, caching),
           "async_scheduling": rng.random() < 0.5, "prefix_match_unit": unit}
    lines = [json.dumps({"config": cfg}), *make_spec_mamba.requests(rng, lcm, mml, 0.35)]
    return "cu" + str(seed), lines


if __name__ == "__main__":
    make_spec_mamba.write_traces(trace, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
