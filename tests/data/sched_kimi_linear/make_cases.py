# ruff: noqa
"""Writes scheduler traces in Kimi Linear's KV cache layout (a dev tool, not a test):
``kseedN.trace.jsonl``, N in FIRST..LAST-1.

    python tests/data/sched_kimi_linear/make_cases.py OUT_DIR FIRST LAST

The groups are Kimi-Linear-48B-A3B's at TP 4 as vLLM 0.33 plans them
(../kimi_linear/answers.json: three KDA groups, MambaManager, no prefill checkpoint block, then
the MLA layers' group, FullAttentionManager), block 512 (its hybrid block at TP 4); prompts of
up to 3 blocks and a bit built from two shared prefixes (resends and truncations too), a pool
from just what one max_model_len request needs to 40 blocks more, 2-8 sequences, a budget of
256-2048 tokens, a long-prefill threshold, KV events half the time. Answers:
../oracle_mamba.py (README.md).
"""
import json
import random
import sys

BS, MML = 512, 4096
GROUPS = [{"type": "mamba"}] * 3 + [{"type": "full"}]


def trace(seed: int) -> list[str]:
    rng = random.Random(seed)
    need = 3 * 2 + MML // BS        # (vLLM's start-up check: one max_model_len request)
    cfg = {"block_size": BS, "num_blocks": need + 1 + rng.choice([0, 3, 10, 40]),
           "max_num_seqs": rng.choice([2, 4, 8]),
           "max_num_batched_tokens": rng.choice([256, 512, 700, 1024, 2048]),
           "max_model_len": MML, "groups": GROUPS,
           "long_prefill_token_threshold": rng.choice([0, 0, 300]),
           "kv_events": rng.random() < 0.5}
    prefixes = [[rng.randrange(3, 30000) for _ in range(rng.randrange(300, 2 * BS + 100))]
                for _ in range(2)]
    lines = [json.dumps({"config": cfg})]
    step, prev = 0, []
    for i in range(rng.randrange(4, 9)):
        r = rng.random()
        if r < 0.2 and prev:
            p = list(rng.choice(prev))
        elif r < 0.35 and prev:
            q = rng.choice(prev)
            p = q[:rng.randrange(1, len(q) + 1)]
        else:
            p = list(rng.choice(prefixes)) + [rng.randrange(3, 30000)
                                              for _ in range(rng.randrange(0, 2 * BS))]
        p = p[:MML - 200]
        prev.append(p)
        step += rng.choice([0, 0, 1, 3, 8])
        lines.append(json.dumps({"id": f"r{i}", "prompt_token_ids": p,
                                 "output_length": rng.randrange(1, 120), "arrival_step": step}))
    return lines


if __name__ == "__main__":
    out, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for seed in range(first, last):
        with open(f"{out}/kseed{seed}.trace.jsonl", "w") as f:
            f.write("\n".join(trace(seed)) + "\n")
