# ruff: noqa
"""Dev tool (not a test): random scheduler traces with Mamba groups in "align" mode (prefix
caching on) beside attention groups of other block sizes, no drafts, for
oracle_mamba_mixed.py (this folder).

    python3 tests/data/sched_mamba_mixed/make_mamba_mixed.py OUT_DIR FIRST LAST   # seeds FIRST..LAST-1

Seed N writes `mmN.trace.jsonl`. Each draws, from `random.Random(N)`: the block B (8, 16 or 32:
the config line's, the Mamba groups'), 1-2 Mamba groups (Mamba1, or Mamba2 with a prefill
checkpoint), 1-2 attention groups each at 2B, B/2, 4B or B (at least one not at B; a full
group, or 1 in 4 a sliding window of 19, 32 or 64), in a random order; max_model_len 256 or
384; a pool from what one max_model_len request needs to 60 blocks more (small pools preempt);
2-8 sequences, a budget of 48-256 tokens, a long-prefill threshold, FCFS or priority, KV events
1 in 2, with Mamba2 a retention interval (vLLM's default 0 half the time, else dense or 2 or 4
times the groups' lcm); the requests of ../sched_spec_mamba/make_spec_mamba.py.
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


def attention_group(rng: random.Random, size: int, bs: int) -> dict:
    g = {"type": "full"}
    if rng.random() < 0.25:
        g = {"type": "sliding_window", "sliding_window": rng.choice([19, 32, 64])}
    if size != bs:
        g["block_size"] = size
    return g


def trace(seed: int) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    bs = rng.choice([8, 16, 32])
    ckpt = rng.random() < 0.5
    groups = [{"type": "mamba", "checkpoint": True} if ckpt else {"type": "mamba"}
              for _ in range(rng.choice([1, 2]))]
    other = rng.choice([2 * bs, bs // 2, 4 * bs, 2 * bs])
    sizes = [other] + [rng.choice([bs, bs, other, 2 * bs]) for _ in range(rng.choice([0, 1]))]
    for size in sizes:
        groups.insert(rng.randrange(len(groups) + 1), attention_group(rng, size, bs))
    mml = rng.choice([256, 384])
    nm = sum(g["type"] == "mamba" for g in groups)
    need = nm * (3 if ckpt else 2) + sum(-(-mml // s) for s in sizes)
    cfg = make_spec_mamba.base_config(rng, bs, need + 1 + rng.choice([0, 2, 5, 10, 20, 60]),
                                      mml, groups, True)
    if ckpt:
        lcm = math.lcm(bs, *sizes)
        r = rng.choice([0, 0, None, 2 * lcm, 4 * lcm])
        if r != 0:
            cfg["prefix_cache_retention_interval"] = r
    lines = [json.dumps({"config": cfg}), *make_spec_mamba.requests(rng, bs, mml, 0.35)]
    return "mm" + str(seed), lines


if __name__ == "__main__":
    make_spec_mamba.write_traces(trace, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
