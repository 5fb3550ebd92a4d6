# ruff: noqa
"""Dev tool (not a test): random scheduler traces for oracle_spec_mamba.py (this folder) that
put a `prefix_cache_retention_interval` beside EAGLE's legacy block drop over Mamba2 groups, a
combination make_spec_mamba.py never draws (it sets no interval).

    python3 tests/data/sched_spec_mamba/make_spec_mamba_retention.py [--dense] OUT_DIR FIRST LAST

Seed N writes `smrN.trace.jsonl` (method eagle3; `--mtp` is not needed); with `--dense`,
`smrdN.trace.jsonl`, the same draws with the interval null (vLLM's dense retention). Each draws, from
`random.Random(N)`: K 1-4, an acceptance rate, sync or async scheduling, block 16 or 32, 1-3
Mamba2 groups (each with a prefill checkpoint block) and the full-attention group at a random
place, the flagged groups as make_spec_mamba.py does, the interval (0, or 1-4 blocks), always
prefix caching ("align") and `disable_lookahead_block_hashes`; the pool, budget, threshold,
policy, KV events (1 in 2) and requests as make_spec_mamba.py draws them.
"""

import json
import random
import sys

from make_spec_mamba import requests


def trace(seed: int, dense: bool = False) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    k = rng.randint(1, 4)
    rate = rng.choice([0.3, 0.5, 0.7, 0.9])
    asyn = rng.random() < 0.5
    bs = rng.choice([16, 32])
    nm = rng.choice([1, 2, 3])
    groups = [{"type": "mamba", "checkpoint": True} for _ in range(nm)]
    full = rng.randrange(nm + 1)
    groups.insert(full, {"type": "full"})
    mml = rng.choice([256, 384])
    need = nm * (3 + k) + -(-mml // bs)     # vLLM's start-up check, as make_spec_mamba.py
    cfg = {"block_size": bs, "num_blocks": need + 1 + rng.choice([0, 2, 5, 10, 20, 60]),
           "max_num_seqs": rng.choice([2, 4, 8]),
           "max_num_batched_tokens": rng.choice([48, 64, 100, 128, 256]),
           "max_model_len": mml, "groups": groups,
           "long_prefill_token_threshold": rng.choice([0, 0, 40, 96]),
           "policy": rng.choice(["fcfs", "fcfs", "priority"]),
           "scheduler_reserve_full_isl": rng.choice([True, False]),
           "enable_prefix_caching": True, "kv_events": rng.random() < 0.5,
           "async_scheduling": asyn, "num_speculative_tokens": k,
           "spec_acceptance_rate": rate, "spec_seed": rng.randrange(1000),
           "spec_method": "eagle3", "disable_lookahead_block_hashes": True,
           "prefix_cache_retention_interval": bs * rng.choice([0, 1, 2, 2, 3, 4])}
    if rng.random() < 0.75:
        cfg["eagle_groups"] = [full]
    if dense:
        cfg["prefix_cache_retention_interval"] = None
    lines = [json.dumps({"config": cfg}), *requests(rng, bs, mml, 0.35)]
    return ("smrd" if dense else "smr") + str(seed), lines


if __name__ == "__main__":
    dense = sys.argv[1] == "--dense"
    args = sys.argv[1 + dense:]
    out, first, last = args[0], int(args[1]), int(args[2])
    for seed in range(first, last):
        name, lines = trace(seed, dense)
        with open(f"{out}/{name}.trace.jsonl", "w") as f:
            f.write("\n".join(lines) + "\n")
