"""Dev tool (not a test): write random scheduler cases for the oracle.

    python tests/data/sched_fresh/make_cases.py [--async] OUT_DIR SEED...
    shared/oracle/tool/oracle sched OUT_DIR/NAME.trace.jsonl -o OUT_DIR/NAME.expected.jsonl

With --async the config line says "async_scheduling": true (vLLM's AsyncScheduler; the
cases are named aseedN) and some requests are follow-ups: an earlier request's prompt plus its
first outputs (the oracle's output-token formula), arriving while it decodes, so a block that
an in-flight decode completes is asked for (the h_followup_gap effect).

Each case mixes shared prefixes (so hits and evictions happen), staggered arrival steps,
priorities and a random config (small pools force preemption; chunked prefill on/off; a long
prefill threshold; watermark; max_model_len).
"""

import json
import random
import sys

OUTPUT_TOKEN_BASE = 1_000_000      # the oracle's fake model: base + index*(max_model_len+1) + p


def make(seed: int, follow_ups: bool = False) -> tuple[dict, list[dict]]:
    rng = random.Random(seed)
    bs = rng.choice([4, 8, 16])
    cfg = {
        "block_size": bs,
        "num_blocks": rng.choice([24, 40, 64, 128]),
        "max_num_seqs": rng.choice([2, 4, 8, 16]),
        "max_num_batched_tokens": rng.choice([48, 64, 128, 256]),
        "max_model_len": rng.choice([256, 400, 512]),
        "long_prefill_token_threshold": rng.choice([0, 0, 24, 40]),
        "policy": rng.choice(["fcfs", "fcfs", "priority"]),
        "watermark": rng.choice([0.0, 0.0, 0.05]),
        "scheduler_reserve_full_isl": rng.choice([True, True, False]),
        "enable_chunked_prefill": rng.choice([True, True, False]),
        "kv_events": rng.choice([True, False]),
    }
    if not cfg["enable_chunked_prefill"]:
        # vLLM requires a budget of at least max_model_len when prompts cannot be chunked.
        cfg["max_num_batched_tokens"] = max(cfg["max_num_batched_tokens"], cfg["max_model_len"])
    prefixes = [[rng.randrange(1, 30000) for _ in range(rng.randrange(8, 80))] for _ in range(3)]
    reqs = []
    for i in range(rng.randrange(6, 14)):
        p = list(rng.choice(prefixes)) if rng.random() < 0.7 else []
        p += [rng.randrange(1, 30000) for _ in range(rng.randrange(1, 60))]
        p = p[: min(150, cfg["max_model_len"] - 80)]
        reqs.append({"id": f"s{seed}r{i}", "prompt_token_ids": p,
                     "output_length": rng.randrange(1, 60),
                     "arrival_step": rng.choice([0, 0, rng.randrange(0, 40)]),
                     "priority": rng.randrange(0, 3)})
    reqs.sort(key=lambda r: r["arrival_step"])
    if follow_ups:
        stride = cfg["max_model_len"] + 1
        for i in range(1, len(reqs)):
            if rng.random() < 0.4:
                j = rng.randrange(i)
                src = reqs[j]
                m = rng.randrange(1, src["output_length"] + 1)
                outs = [OUTPUT_TOKEN_BASE + j * stride + q for q in range(m)]
                p = (src["prompt_token_ids"] + outs)[: min(150, cfg["max_model_len"] - 80)]
                reqs[i]["prompt_token_ids"] = p
                reqs[i]["arrival_step"] = max(reqs[i]["arrival_step"], src["arrival_step"] + m)
        reqs.sort(key=lambda r: r["arrival_step"])     # stable: a source stays before
    # Every request must fit alone (else vLLM stalls): the pool holds the longest sequence,
    # plus a random margin that decides how much preemption there is.
    need = max(-(-(len(r["prompt_token_ids"]) + r["output_length"]) // bs) for r in reqs)
    need += int(cfg["watermark"] * cfg["num_blocks"]) + 2
    cfg["num_blocks"] = max(cfg["num_blocks"], need + rng.choice([0, 2, 8, need]))
    return cfg, reqs


if __name__ == "__main__":
    args = sys.argv[1:]
    asyn = args[0] == "--async"
    out, seeds = (args[1], args[2:]) if asyn else (args[0], args[1:])
    for s in seeds:
        cfg, reqs = make(int(s), follow_ups=asyn)
        if asyn:
            cfg["async_scheduling"] = True
        with open(f"{out}/{'aseed' if asyn else 'seed'}{s}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)
