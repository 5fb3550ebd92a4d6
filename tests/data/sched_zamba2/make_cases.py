"""Writes random scheduler traces of Zamba2 models (a dev tool, not a test): ``PREFIX_N.trace.
jsonl``, PREFIX the model (../zamba2/): ``z1`` tiny-zamba2 (a full-attention group and three
Mamba2 groups at block 16), ``z3`` tiny-zamba2-three-blocks (one and two at 32), ``z27``
zamba2-2.7b-style (one and six at 48): the groups vLLM's planner builds for them
(../zamba2/specs.json), written in the config line for the oracle.

    python tests/data/sched_zamba2/make_cases.py OUT_DIR FIRST LAST   # seeds FIRST..LAST-1

Each seed draws: the model, prefix caching on (vLLM's default for a hybrid: "align" mode) or
off ("none" mode), a pool from what one max_model_len request needs to 200 blocks more, 1-8
sequences, a budget of 16-512 tokens, a long-prefill threshold, FCFS or priority, whole-prompt
admission on or off, KV events 3 times in 10, a retention interval, async scheduling one time
in two, and 3-10 requests built from three shared prefixes (resends and truncations of earlier
prompts too). Answers: ../oracle_mamba.py (README).
"""
# ruff: noqa
import json
import random
import sys

MODELS = {"z1": (16, 3), "z3": (32, 2), "z27": (48, 6)}   # (block size, Mamba groups)


def trace(seed: int) -> tuple[str, list[str]]:
    rng = random.Random(seed * 37 + 11)
    prefix = rng.choice(["z1", "z1", "z3", "z27"])
    bs, nm = MODELS[prefix]
    caching = rng.random() < 0.7
    groups = [{"type": "full"}] + [{"type": "mamba", "checkpoint": True}] * nm
    mml = rng.choice([256, 512, 1024])
    # vLLM's start-up check: one max_model_len request (align: 3 blocks a Mamba group with
    # its checkpoint block; none: one)
    need = -(-mml // bs) + nm * (3 if caching else 1)
    cfg = {"block_size": bs, "num_blocks": need + 1 + rng.choice([0, 1, 3, 10, 50, 200]),
           "max_num_seqs": rng.choice([1, 2, 4, 8]),
           "max_num_batched_tokens": rng.choice([16, 48, 64, 100, 128, 256, 512]),
           "max_model_len": mml, "groups": groups,
           "enable_prefix_caching": caching,
           "long_prefill_token_threshold": rng.choice([0, 0, 40, 96]),
           "policy": rng.choice(["fcfs", "fcfs", "priority"]),
           "scheduler_reserve_full_isl": rng.choice([True, False]),
           "kv_events": rng.random() < 0.3,
           "async_scheduling": rng.random() < 0.5}
    if cfg["max_num_batched_tokens"] < cfg["max_num_seqs"]:
        cfg["max_num_seqs"] = 2
    if caching:
        cfg["prefix_cache_retention_interval"] = rng.choice([0, 0, None, 2 * bs, 4 * bs])
    prefixes = [[rng.randrange(3, 30000) for _ in range(rng.randrange(1, 6 * bs + 20))]
                for _ in range(3)]
    lines = [json.dumps({"config": cfg})]
    step = 0
    prev: list[list[int]] = []
    for i in range(rng.randrange(3, 11)):
        r = rng.random()
        if r < 0.2 and prev:
            p = list(rng.choice(prev))
        elif r < 0.35 and prev:
            q = rng.choice(prev)
            p = q[:rng.randrange(1, len(q) + 1)] or [5]
        else:
            p = list(rng.choice(prefixes))[:rng.randrange(1, 6 * bs + 20)] + \
                [rng.randrange(3, 30000) for _ in range(rng.randrange(0, 3 * bs))]
        out = rng.randrange(1, 60)
        p = p[:mml - out - 1]
        prev.append(p)
        step += rng.choice([0, 0, 1, 2, 5, 10])
        lines.append(json.dumps({"id": f"r{i}", "prompt_token_ids": p, "output_length": out,
                                 "arrival_step": step, "priority": rng.randrange(3)}))
    return prefix, lines


if __name__ == "__main__":
    out, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for seed in range(first, last):
        prefix, lines = trace(seed)
        with open(f"{out}/{prefix}_{seed}.trace.jsonl", "w") as f:
            f.write("\n".join(lines) + "\n")
