# ruff: noqa
"""Dev tool (not a test): random scheduler traces for oracle_spec_pmu.py (this folder) whose
hits are a hash unit or two long under EAGLE's legacy drop, which make_spec_pmu.py's requests
(prompts of up to three blocks from shared prefixes) seldom give: with the drop vLLM's
full-attention lookup takes one hash unit off any hit, a hit of one unit included.

    python3 tests/data/sched_spec_pmu/make_spec_pmu_drop.py OUT_DIR FIRST LAST

Seed N writes `pmdN.trace.jsonl` (method eagle3, `disable_lookahead_block_hashes` always). Each
draws, from `random.Random(N)`: K 1-4, an acceptance rate, sync or async; block 32, 48 or 64 and
a unit of 4, 8 or 16 finer than it; 1-3 Mamba groups (Mamba1 or, half the time, Mamba2 with a
prefill checkpoint) and the full-attention group at a random place; the flagged groups, pool,
budget, threshold, policy and KV events as make_spec_pmu.py; 3-9 requests over two shared
prefixes: half of them a prefix's first 1-4 units plus up to a unit, the others an earlier
prompt's first 1-2 units (plus up to a unit less one) and then fresh tokens.
"""

import json
import random
import sys

from make_spec_pmu import spec_and_unit
from make_spec_mamba import mamba_groups, request_line, sched_config, start_up_need, write_traces


def trace(seed: int) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    k, rate, asyn, bs, unit = spec_and_unit(rng)
    mml = rng.choice([256, 384])
    groups, full, nm, ckpt = mamba_groups(rng)
    need = start_up_need(nm, ckpt, k, bs, mml)
    cfg = sched_config(rng, bs, mml, groups, need, True, asyn, k, rate)
    cfg.update(prefix_match_unit=unit, spec_method="eagle3", disable_lookahead_block_hashes=True)
    if rng.random() < 0.75:
        cfg["eagle_groups"] = [full]
    prefixes = [[rng.randrange(3, 30000) for _ in range(5 * unit)] for _ in range(2)]
    lines, prev, step = [], [], 0
    for i in range(rng.randrange(3, 10)):
        if prev and rng.random() < 0.5:
            src = rng.choice(prev)
            p = src[:rng.randrange(1, 3) * unit + rng.randrange(unit)] + \
                [rng.randrange(3, 30000) for _ in range(rng.randrange(1, 2 * bs))]
        else:
            p = rng.choice(prefixes)[:rng.randrange(1, 5) * unit + rng.randrange(1, unit + 1)]
        prev.append(p)
        step += rng.choice([0, 1, 2, 5, 10])
        lines.append(request_line(rng, i, p, step, 40))
    return "pmd" + str(seed), [json.dumps({"config": cfg}), *lines]


if __name__ == "__main__":
    write_traces(trace, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
