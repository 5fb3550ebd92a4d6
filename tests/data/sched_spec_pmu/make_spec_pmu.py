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
from make_spec_mamba import requests   # (the same request lines, truncations up to 0.4)


def trace(seed: int) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    method = rng.choice(["ngram", "ngram", "eagle3", "eagle3", "mtp"])
    k = rng.randint(1, 4)
    rate = rng.choice([0.3, 0.5, 0.7, 0.9])
    asyn = rng.random() < 0.5
    bs = rng.choice([32, 48, 64])
    unit = rng.choice([u for u in (4, 8, 16) if bs % u == 0 and u < bs])
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
        nm = rng.choice([1, 2, 3])
        ckpt = rng.random() < 0.5
        groups = [{"type": "mamba", "checkpoint": True} if ckpt else {"type": "mamba"}
                  for _ in range(nm)]
        full = rng.randrange(nm + 1)
        groups.insert(full, {"type": "full"})
        need = nm * (2 + int(ckpt) + k) + -(-mml // bs)
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
           "prefix_match_unit": unit}
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
    out, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for seed in range(first, last):
        name, lines = trace(seed)
        with open(f"{out}/{name}.trace.jsonl", "w") as f:
            f.write("\n".join(lines) + "\n")
