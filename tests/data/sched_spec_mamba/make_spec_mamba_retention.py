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

from make_spec_mamba import mamba_groups, requests, sched_config, start_up_need, write_traces


def trace(seed: int, dense: bool = False) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    k = rng.randint(1, 4)
    rate = rng.choice([0.3, 0.5, 0.7, 0.9])
    asyn = rng.random() < 0.5
    bs = rng.choice([16, 32])
    groups, full, nm, ckpt = mamba_groups(rng, ckpt=True)
    mml = rng.choice([256, 384])
    need = start_up_need(nm, ckpt, k, bs, mml)
    cfg = sched_config(rng, bs, mml, groups, need, True, asyn, k, rate)
    cfg.update(spec_method="eagle3", disable_lookahead_block_hashes=True,
               prefix_cache_retention_interval=bs * rng.choice([0, 1, 2, 2, 3, 4]))
    if rng.random() < 0.75:
        cfg["eagle_groups"] = [full]
    if dense:
        cfg["prefix_cache_retention_interval"] = None
    lines = [json.dumps({"config": cfg}), *requests(rng, bs, mml, 0.35)]
    return ("smrd" if dense else "smr") + str(seed), lines


if __name__ == "__main__":
    dense = sys.argv[1] == "--dense"
    args = sys.argv[1 + dense:]
    write_traces(lambda seed: trace(seed, dense), args[0], int(args[1]), int(args[2]))
