"""Writes random scheduler traces of attention-free Mamba models (a dev tool, not a test):
``moseedN.trace.jsonl``.

    python tests/data/sched_mamba_only/make_cases.py OUT_DIR FIRST LAST   # seeds FIRST..LAST-1

An attention-free model (vLLM's MambaForCausalLM, FalconMambaForCausalLM, Mamba2ForCausalLM)
has one layer kind, so vLLM's planning puts every layer in one Mamba group; two groups are
drawn one time in five all the same (the scheduler's side of the hybrid coordinator with no
attention group). Each seed draws: Mamba1 or Mamba2 (``"checkpoint": true``), prefix caching
on (vLLM's "align" mode: the Mamba block is the block size, 16 by default for a model with no
attention layer) or off (vLLM's default for an attention-free model: "none" mode, one block of
max_model_len a request), a block of 16, 32 or 64, a pool from just what one max_model_len
request needs to 200 blocks more, 1-8 sequences, a budget of 16-512 tokens, a long-prefill
threshold, FCFS or priority, whole-prompt admission on or off, KV events 3 times in 10, a
retention interval (Mamba2, caching on), and 3-10 requests built from three shared prefixes
(resends and truncations of earlier prompts too). Answers: ../oracle_mamba.py (README).
"""
# ruff: noqa
import json
import random
import sys


def trace(seed: int) -> list[str]:
    rng = random.Random(seed * 31 + 7)
    bs = rng.choice([16, 16, 32, 64])
    ckpt = rng.random() < 0.5
    caching = rng.random() < 0.7
    nm = 2 if rng.random() < 0.2 else 1
    groups = [{"type": "mamba", "checkpoint": True} if ckpt else {"type": "mamba"}] * nm
    mml = rng.choice([256, 512, 1024])
    # vLLM's start-up check: one max_model_len request (align: 2 blocks, +1 checkpoint block
    # for Mamba2; none: one block of max_model_len)
    need = nm * ((3 if ckpt else 2) if caching else 1)
    cfg = {"block_size": bs, "num_blocks": need + 1 + rng.choice([0, 1, 3, 10, 50, 200]),
           "max_num_seqs": rng.choice([1, 2, 4, 8]),
           "max_num_batched_tokens": rng.choice([16, 48, 64, 100, 128, 256, 512]),
           "max_model_len": mml, "groups": groups,
           "enable_prefix_caching": caching,
           "long_prefill_token_threshold": rng.choice([0, 0, 40, 96]),
           "policy": rng.choice(["fcfs", "fcfs", "priority"]),
           "scheduler_reserve_full_isl": rng.choice([True, False]),
           "kv_events": rng.random() < 0.3}
    if cfg["max_num_batched_tokens"] < cfg["max_num_seqs"]:
        cfg["max_num_seqs"] = 2
    if ckpt and caching:
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
    return lines


if __name__ == "__main__":
    out, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for seed in range(first, last):
        with open(f"{out}/moseed{seed}.trace.jsonl", "w") as f:
            f.write("\n".join(trace(seed)) + "\n")
