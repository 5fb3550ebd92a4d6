# ruff: noqa
"""Dev tool (not a test): random scheduler traces with speculative decoding and a
`prefix_match_unit` finer than the block (vLLM's partial hash hits), for oracle_spec_pmu.py.

    python3 tests/data/sched_spec_pmu/make_spec_pmu.py OUT_DIR FIRST LAST   # seeds FIRST..LAST-1

Seed N writes `pmN.trace.jsonl` (`pmtpN` for method mtp: answered with `--mtp`; `pmaN`, `pmatpN` for
attention-only groups). Each draws, from `random.Random(N)`: the method (ngram, eagle3, mtp:
2 / 2 / 1), K 1-4, an acceptance rate 0.3-0.9, sync or async; groups: 1 in 6 attention only
(full + sliding window 48-128, or two full groups), else 1-3 Mamba groups (Jamba's Mamba1 or,
half the time, Mamba2 with a prefill checkpoint) and a full-attention group at a random place;
block 32, 48 or 64 and a unit of 4, 8 or 16 dividing it, finer than it; with EAGLE-family
methods the legacy hashes (`disable_lookahead_block_hashes`, 1 in 2) and the flagged groups
(the full-attention group 3 in 4, else none: vLLM flags every group); max_model_len 256 or
384; a pool from just vLLM's start-up need to 60 blocks more; 2-8 sequences, a budget of
48-256 tokens, a long-prefill threshold; KV events 1 in 2; 3-9 requests over three shared
prefixes, resends and truncations at any token (so hits end inside blocks), 1-80 output tokens.
Prefix caching is always on (align mode: without it the unit changes nothing).
"""

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sched_spec_mamba"))
# the same Mamba groups, start-up need, scheduler knobs and request lines (truncations up to 0.4)
from make_spec_mamba import mamba_groups, requests, sched_config, start_up_need, write_traces


def spec_and_unit(rng: random.Random) -> tuple[int, float, bool, int, int]:
    """K 1-4, an acceptance rate, sync or async, block 32, 48 or 64 and a unit of 4, 8 or 16
    dividing it, finer than it, drawn in this order; `make_spec_pmu_drop` and `make_junction`
    draw theirs here too."""
    k = rng.randint(1, 4)
    rate = rng.choice([0.3, 0.5, 0.7, 0.9])
    asyn = rng.random() < 0.5
    bs = rng.choice([32, 48, 64])
    unit = rng.choice([u for u in (4, 8, 16) if bs % u == 0 and u < bs])
    return k, rate, asyn, bs, unit


def trace(seed: int) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    method = rng.choice(["ngram", "ngram", "eagle3", "eagle3", "mtp"])
    k, rate, asyn, bs, unit = spec_and_unit(rng)
    attention_only = rng.random() < 1 / 6
    mml = rng.choice([256, 384])
    if attention_only:
        window = rng.choice([48, 64, 100, 128])
        groups = rng.choice([[{"type": "full"}, {"type": "sliding", "window": window}],
                             [{"type": "full"}, {"type": "full"}]])
        full = 0
        need = sum(-(-mml // bs) if g["type"] == "full" else -(-(window - 1) // bs) + 2
                   for g in groups)
    else:
        groups, full, nm, ckpt = mamba_groups(rng)
        need = start_up_need(nm, ckpt, k, bs, mml)
    cfg = sched_config(rng, bs, mml, groups, need, True, asyn, k, rate)
    cfg["prefix_match_unit"] = unit
    if method != "ngram":
        cfg["spec_method"] = method
        if rng.random() < 1 / 2:
            cfg["disable_lookahead_block_hashes"] = True
        if rng.random() < 0.75:
            cfg["eagle_groups"] = [full]
    lines = [json.dumps({"config": cfg}), *requests(rng, bs, mml, 0.4)]
    tag = ("pma" if attention_only else "pm") + ("tp" if method == "mtp" else "")
    return tag + str(seed), lines


if __name__ == "__main__":
    write_traces(trace, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
