# ruff: noqa
"""Dev tool (not a test): random scheduler traces with speculative decoding over Mamba groups,
for oracle_spec_mamba.py (this folder).

    python3 tests/data/sched_spec_mamba/make_spec_mamba.py OUT_DIR FIRST LAST   # seeds FIRST..LAST-1

Seed N writes `smN.trace.jsonl` (`smtpN` for method mtp: answered with `--mtp`). Each draws,
from `random.Random(N)`: the method (ngram, eagle3, mtp: 2 / 2 / 1), K 1-4, an acceptance rate
0.3-0.9, sync or async scheduling, prefix caching on (vLLM's "align" Mamba mode, 2 in 3) or off
("none"), with EAGLE-family methods and caching the legacy hashes
(`disable_lookahead_block_hashes`, 1 in 3) and the flagged groups (the full-attention group, as
Qwen3-Next's MTP layer, 3 in 4; else none, which vLLM takes as every group); block 16 or 32,
1-3 Mamba groups (Jamba's Mamba1 or, half the time, Mamba2 with a prefill checkpoint) and the
full-attention group at a random place; max_model_len 256 or 384; a pool from just what vLLM's
start-up check needs for one max_model_len request (with the K speculative blocks a Mamba group
keeps) to 60 blocks more, tight pools preempting; 2-8 sequences, a budget of 48-256 tokens, a
long-prefill threshold; KV events 1 in 2; 3-9 requests over three shared prefixes (resends and
truncations too) with 1-80 output tokens.
"""

import json
import random
import sys


def trace(seed: int) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    method = rng.choice(["ngram", "ngram", "eagle3", "eagle3", "mtp"])
    k = rng.randint(1, 4)
    rate = rng.choice([0.3, 0.5, 0.7, 0.9])
    caching = rng.random() < 2 / 3
    asyn = rng.random() < 0.5
    bs = rng.choice([16, 32])
    groups, full, nm, ckpt = mamba_groups(rng)
    mml = rng.choice([256, 384])
    need = start_up_need(nm, ckpt, k, bs, mml, caching)
    cfg = sched_config(rng, bs, mml, groups, need, caching, asyn, k, rate)
    if method != "ngram":
        cfg["spec_method"] = method
        if caching and rng.random() < 1 / 3:
            cfg["disable_lookahead_block_hashes"] = True
        if rng.random() < 0.75:
            cfg["eagle_groups"] = [full]
    lines = [json.dumps({"config": cfg}), *requests(rng, bs, mml, 0.35)]
    return ("smtp" if method == "mtp" else "sm") + str(seed), lines


def mamba_groups(rng: random.Random, ckpt: bool | None = None) -> tuple[list[dict], int, int, bool]:
    """1-3 Mamba groups (Jamba's Mamba1 or, ``ckpt`` drawn 1 in 2 unless given, Mamba2 with a
    prefill checkpoint) and the full-attention group inserted at a random place: the groups, the
    full group's index, the Mamba group count and ``ckpt``. `make_spec_mamba_retention`,
    `make_spec_pmu`, `make_spec_pmu_drop` and `make_junction` draw theirs here too."""
    nm = rng.choice([1, 2, 3])
    if ckpt is None:
        ckpt = rng.random() < 0.5
    groups = [{"type": "mamba", "checkpoint": True} if ckpt else {"type": "mamba"}
              for _ in range(nm)]
    full = rng.randrange(nm + 1)
    groups.insert(full, {"type": "full"})
    return groups, full, nm, ckpt


def start_up_need(nm: int, ckpt: bool, k: int, bs: int, mml: int, caching: bool = True) -> int:
    """vLLM's start-up check (oracle_mamba.py): the blocks one max_model_len request needs in
    num_blocks - 1, with the K speculative blocks each Mamba group keeps."""
    per_mamba = (2 + int(ckpt) + k) if caching else (1 + k)
    return nm * per_mamba + -(-mml // bs)


def sched_config(rng: random.Random, bs: int, mml: int, groups: list[dict], need: int,
                 caching: bool, asyn: bool, k: int, rate: float,
                 spare: tuple[int, ...] = (0, 2, 5, 10, 20, 60)) -> dict:
    """The config line's scheduler knobs, drawn in this order: the pool (``need`` + 1 + a
    ``spare`` draw), sequences, budget, long-prefill threshold, policy, full-ISL reserve, KV
    events (1 in 2) and the spec seed; the callers add their own keys after these."""
    return {**base_config(rng, bs, need + 1 + rng.choice(spare), mml, groups, caching),
            "async_scheduling": asyn, "num_speculative_tokens": k,
            "spec_acceptance_rate": rate, "spec_seed": rng.randrange(1000)}


def base_config(rng: random.Random, bs: int, num_blocks: int, mml: int, groups: list[dict],
                caching: bool) -> dict:
    """The config line's first keys, drawn in this order: sequences, budget, long-prefill
    threshold, policy, full-ISL reserve, KV events (1 in 2). Its key order is the line's, so
    the callers (`sched_config`, the mixed-block generators) add theirs after it."""
    return {"block_size": bs, "num_blocks": num_blocks,
            "max_num_seqs": rng.choice([2, 4, 8]),
            "max_num_batched_tokens": rng.choice([48, 64, 100, 128, 256]),
            "max_model_len": mml, "groups": groups,
            "long_prefill_token_threshold": rng.choice([0, 0, 40, 96]),
            "policy": rng.choice(["fcfs", "fcfs", "priority"]),
            "scheduler_reserve_full_isl": rng.choice([True, False]),
            "enable_prefix_caching": caching, "kv_events": rng.random() < 0.5}


def requests(rng: random.Random, bs: int, mml: int, truncate_below: float) -> list[str]:
    """3-9 request lines over three shared prefixes: resends (1 in 5), truncations at any
    token (up to ``truncate_below``), else a prefix's start and fresh tokens; `make_spec_pmu`
    draws its own the same way."""
    prefixes = [[rng.randrange(3, 30000) for _ in range(rng.randrange(1, 3 * bs + 20))]
                for _ in range(3)]
    lines = []
    step = 0
    prev: list[list[int]] = []
    for i in range(rng.randrange(3, 10)):
        r = rng.random()
        if r < 0.2 and prev:
            p = list(rng.choice(prev))
        elif r < truncate_below and prev:
            src = rng.choice(prev)
            p = src[:rng.randrange(1, len(src) + 1)] or [5]
        else:
            p = list(rng.choice(prefixes))[:rng.randrange(1, 3 * bs + 20)] + \
                [rng.randrange(3, 30000) for _ in range(rng.randrange(0, 2 * bs))]
        p = p[:mml - 100]
        prev.append(p)
        step += rng.choice([0, 0, 1, 2, 5, 10])
        lines.append(request_line(rng, i, p, step, 80))
    return lines


def request_line(rng: random.Random, i: int, p: list[int], step: int, max_out: int) -> str:
    """Request ``i``'s line: its prompt and arrival step, then 1 to ``max_out`` - 1 output
    tokens and a priority 0-2, drawn in this order."""
    return json.dumps({"id": f"r{i}", "prompt_token_ids": p,
                       "output_length": rng.randrange(1, max_out), "arrival_step": step,
                       "priority": rng.randrange(3)})


def write_traces(trace, out: str, first: int, last: int) -> None:
    """``trace(seed)``'s lines for seeds ``first`` to ``last`` - 1, each to OUT/NAME.trace.jsonl."""
    for seed in range(first, last):
        name, lines = trace(seed)
        with open(f"{out}/{name}.trace.jsonl", "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    write_traces(trace, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
