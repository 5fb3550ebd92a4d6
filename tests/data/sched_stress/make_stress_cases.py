"""Dev tool (not a test): adversarial scheduler cases for the oracle (tests/data/sched_stress).

    python tests/data/sched_stress/make_stress_cases.py [--async] [--hybrid] OUT_DIR SEED...
    shared/oracle/tool/oracle sched OUT_DIR/NAME.trace.jsonl -o OUT_DIR/NAME.expected.jsonl

The sizes `../sched_fresh/make_cases.py` rarely makes: blocks of 2 and 32 tokens, one running
sequence, long-prefill thresholds of 1 token and of one block, identical prompts arriving
together, prompts cut at block edges and one token past them, prompts as long as the model
allows, outputs of 1, a block and a block plus one token, pools at the smallest that fits.
Cases are named xseedN (xaseedN with --async, xhseedN / xhaseedN with --hybrid: its groups
and follow-ups come from make_cases.py).
"""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sched_fresh"))
from make_cases import add_follow_ups, write_cases


def make(seed: int, asyn: bool) -> tuple[dict, list[dict]]:
    """The config and requests of case ``seed`` (``asyn``: with follow-up prompts)."""
    rng = random.Random(seed)
    bs = rng.choice([2, 4, 8, 16, 32])
    mml = rng.choice([128, 256, 300, 512])
    cfg = {"block_size": bs, "num_blocks": rng.choice([8, 16, 32, 64]),
           "max_num_seqs": rng.choice([1, 2, 3, 5, 32]),
           "max_num_batched_tokens": rng.choice([mml // 4, 32, 100, 257, 1024]),
           "max_model_len": mml,
           "long_prefill_token_threshold": rng.choice([0, 0, 1, 17, bs]),
           "policy": rng.choice(["fcfs", "priority"]),
           "watermark": rng.choice([0.0, 0.0, 0.01, 0.2]),
           "scheduler_reserve_full_isl": rng.choice([True, False]),
           "enable_chunked_prefill": rng.choice([True, True, False]),
           "kv_events": rng.choice([True, True, False])}
    if not cfg["enable_chunked_prefill"]:
        cfg["max_num_batched_tokens"] = max(cfg["max_num_batched_tokens"], mml)
    cap = mml - 70
    shared = [rng.randrange(1, 30000) for _ in range(rng.choice([bs, 2 * bs, 3 * bs + 1, 40]))]
    reqs = []
    n = rng.randrange(8, 30)
    for i in range(n):
        kind = rng.random()
        if kind < 0.3:
            p = list(shared)                                    # identical prompts
        elif kind < 0.5:
            cut = shared[: rng.randrange(1, len(shared) + 1)]   # a prefix, then more
            p = cut + [rng.randrange(1, 30000) for _ in range(rng.choice([0, bs, 2 * bs, 5]))]
        elif kind < 0.6:
            p = [rng.randrange(1, 30000) for _ in range(cap)]   # as long as allowed
        else:
            p = [rng.randrange(1, 30000) for _ in range(rng.randrange(1, 3 * bs + 2))]
        p = p[:cap] or [7]
        reqs.append({"id": f"x{seed}r{i}", "prompt_token_ids": p,
                     "output_length": rng.choice([1, 1, 2, bs, bs + 1, rng.randrange(1, 60)]),
                     "arrival_step": rng.choice([0, 0, 0, rng.randrange(0, 15),
                                                 rng.randrange(0, 60)]),
                     "priority": rng.choice([0, 0, 1, 2])})
    reqs.sort(key=lambda r: r["arrival_step"])
    if asyn:
        add_follow_ups(reqs, rng, mml, cap)
    need = max(-(-(len(r["prompt_token_ids"]) + r["output_length"]) // bs) for r in reqs)
    need += int(cfg["watermark"] * cfg["num_blocks"]) + 2
    cfg["num_blocks"] = max(cfg["num_blocks"], need + rng.choice([0, 0, 1, 3, need]))
    return cfg, reqs


if __name__ == "__main__":
    write_cases(make, "x")
