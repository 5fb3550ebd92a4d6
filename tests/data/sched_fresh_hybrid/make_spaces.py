"""Campaign generator (2026-12-05). Spaces:
  L: long traces (40-100 requests), follow-up chains in sync AND async, heavy preemption
  T: tiny token budgets (1..bs+1) with hybrid groups incl. 3-kind and reordered groups
  B: odd block sizes (1,3,5,6,12,24,64) with windows/chunks off the block grid
  E: max_model_len edges (mml off the block grid, prompts at mml-1, prompt+out == mml),
     minimal pools
  P: budgets of 3-9 with max_num_seqs up to the budget, tight pools (preemption under tiny budgets)
  H: 200-445 requests a trace
usage: python make_spaces.py [--knobs] SPACE OUT_DIR SEED...  (odd seeds async, even sync)
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sched_fresh"))
from make_cases import pool_need  # (the start-up check's blocks, shared)

OUT_BASE = 1_000_000

def cdiv(a, b): return -(-a // b)

def groups_for(rng, bs, kinds=None):
    def win():
        return max(1, rng.choice([1, 2, bs - 1, bs, bs + 1, 2 * bs + 1, 3 * bs, 7, 33, 64]))
    def chunk():
        return max(1, rng.choice([bs, 2 * bs, 3 * bs, 4 * bs, 2 * bs + 1, 8 * bs]))
    SW = lambda: {"type": "sliding_window", "sliding_window": win()}
    CL = lambda: {"type": "chunked_local", "attention_chunk_size": chunk()}
    F = lambda: {"type": "full"}
    shapes = [
        lambda: [F(), SW(), CL()],
        lambda: [SW(), F()],
        lambda: [CL(), F()],
        lambda: [SW(), CL()],
        lambda: [SW(), SW()],
        lambda: [F(), SW(), SW(), F()],
        lambda: [CL()],
        lambda: [F(), CL(), CL()],
        lambda: [SW(), F(), CL(), SW()],
        lambda: [F(), SW()],
    ]
    return rng.choice(shapes)()

def follow_ups(reqs, rng, mml, cap, p=0.45):
    """in place; requests are in final (arrival, file) order; chains allowed"""
    stride = mml + 1
    for i in range(1, len(reqs)):
        if rng.random() < p:
            j = rng.randrange(max(0, i - 12), i)
            src = reqs[j]
            m = rng.randrange(1, src["output_length"] + 1)
            outs = [OUT_BASE + j * stride + q for q in range(m)]
            extra = [rng.randrange(1, 30000) for _ in range(rng.choice([0, 0, 1, 5, 17]))]
            p_ = (src["prompt_token_ids"] + outs + extra)[:cap]
            reqs[i]["prompt_token_ids"] = p_
            reqs[i]["arrival_step"] = max(reqs[i]["arrival_step"], src["arrival_step"] + m)
    # keep nondecreasing arrivals without reordering (indices are fixed)
    for i in range(1, len(reqs)):
        reqs[i]["arrival_step"] = max(reqs[i]["arrival_step"], reqs[i - 1]["arrival_step"])

def finish(cfg, reqs, rng, asyn, margin):
    bs, mml = cfg["block_size"], cfg["max_model_len"]
    for r in reqs:
        r["output_length"] = max(1, min(r["output_length"], mml - len(r["prompt_token_ids"])))
    if "groups" in cfg:
        need = pool_need(cfg, asyn) + int(cfg["watermark"] * cfg["num_blocks"]) + 1
    else:
        need = max(cdiv(len(r["prompt_token_ids"]) + r["output_length"], bs) for r in reqs)
        need += int(cfg["watermark"] * cfg["num_blocks"]) + 2
    cfg["num_blocks"] = max(cfg["num_blocks"], need + margin)
    if asyn:
        cfg["async_scheduling"] = True

NRANGE = (40, 101)

def space_L(seed, asyn):
    rng = random.Random(seed)
    bs = rng.choice([4, 8, 16, 32])
    mml = rng.choice([256, 384, 512])
    cfg = {"block_size": bs, "num_blocks": 8, "max_num_seqs": rng.choice([4, 8, 16, 32]),
           "max_num_batched_tokens": rng.choice([32, 64, 128, 256]), "max_model_len": mml,
           "long_prefill_token_threshold": rng.choice([0, 0, 16, bs]),
           "policy": rng.choice(["fcfs", "fcfs", "priority"]),
           "watermark": rng.choice([0.0, 0.0, 0.02]),
           "scheduler_reserve_full_isl": rng.choice([True, True, False]),
           "enable_chunked_prefill": rng.choice([True, True, True, False]),
           "kv_events": rng.random() < 0.7}
    if not cfg["enable_chunked_prefill"]:
        cfg["max_num_batched_tokens"] = max(cfg["max_num_batched_tokens"], mml)
    cap = min(200, mml - 60)
    prefixes = [[rng.randrange(1, 30000) for _ in range(rng.randrange(8, 120))] for _ in range(4)]
    reqs, t = [], 0
    for i in range(rng.randrange(*NRANGE)):
        t += rng.choice([0, 0, 0, 1, 2, 5])
        p = list(rng.choice(prefixes)) if rng.random() < 0.6 else []
        p += [rng.randrange(1, 30000) for _ in range(rng.randrange(1, 60))]
        reqs.append({"id": f"L{seed}r{i}", "prompt_token_ids": p[:cap],
                     "output_length": rng.randrange(1, 50), "arrival_step": t,
                     "priority": rng.randrange(0, 4)})
    follow_ups(reqs, rng, mml, cap)
    if rng.random() < 0.3:
        cfg["groups"] = groups_for(rng, bs)
    finish(cfg, reqs, rng, asyn, rng.choice([0, 1, 2, 4]))
    return cfg, reqs

def space_T(seed, asyn):
    rng = random.Random(seed)
    bs = rng.choice([2, 4, 8, 16])
    budget = max(1, rng.choice([1, 2, 3, 5, 7, bs - 1, bs + 1]))
    mml = rng.choice([128, 160, 256])
    cfg = {"block_size": bs, "num_blocks": 8,
           "max_num_seqs": rng.randint(1, min(budget, 4)),
           "max_num_batched_tokens": budget, "max_model_len": mml,
           "long_prefill_token_threshold": rng.choice([0, 0, 1, 2]),
           "policy": rng.choice(["fcfs", "priority"]),
           "watermark": 0.0, "scheduler_reserve_full_isl": rng.choice([True, False]),
           "enable_chunked_prefill": True, "kv_events": rng.random() < 0.7}
    cap = 48
    shared = [rng.randrange(1, 30000) for _ in range(rng.randrange(bs, 3 * bs + 3))]
    reqs, t = [], 0
    for i in range(rng.randrange(4, 10)):
        t += rng.choice([0, 0, 1, 3, 10])
        p = list(shared[: rng.randrange(1, len(shared) + 1)]) if rng.random() < 0.6 else []
        p += [rng.randrange(1, 30000) for _ in range(rng.randrange(0, 20))]
        reqs.append({"id": f"T{seed}r{i}", "prompt_token_ids": (p or [5])[:cap],
                     "output_length": rng.randrange(1, 16), "arrival_step": t,
                     "priority": rng.randrange(0, 3)})
    follow_ups(reqs, rng, mml, cap, 0.3)
    cfg["groups"] = groups_for(rng, bs)
    finish(cfg, reqs, rng, asyn, rng.choice([0, 0, 1, 3]))
    return cfg, reqs

def space_B(seed, asyn):
    rng = random.Random(seed)
    bs = rng.choice([1, 3, 5, 6, 12, 24, 64])
    mml = rng.choice([100, 200, 300]) if bs < 24 else rng.choice([256, 320, 512])
    cfg = {"block_size": bs, "num_blocks": 8, "max_num_seqs": rng.choice([2, 4, 8]),
           "max_num_batched_tokens": rng.choice([16, 32, 64, 100]), "max_model_len": mml,
           "long_prefill_token_threshold": rng.choice([0, 0, 7, bs]),
           "policy": rng.choice(["fcfs", "priority"]),
           "watermark": rng.choice([0.0, 0.0, 0.05]),
           "scheduler_reserve_full_isl": rng.choice([True, False]),
           "enable_chunked_prefill": rng.choice([True, True, False]),
           "kv_events": rng.random() < 0.7}
    if not cfg["enable_chunked_prefill"]:
        cfg["max_num_batched_tokens"] = max(cfg["max_num_batched_tokens"], mml)
    cap = mml - 40
    prefixes = [[rng.randrange(1, 30000) for _ in range(rng.randrange(1, 3 * bs + 20))]
                for _ in range(3)]
    reqs, t = [], 0
    for i in range(rng.randrange(8, 25)):
        t += rng.choice([0, 0, 1, 4])
        p = list(rng.choice(prefixes)) if rng.random() < 0.65 else []
        p += [rng.randrange(1, 30000) for _ in range(rng.randrange(0, 2 * bs + 10))]
        reqs.append({"id": f"B{seed}r{i}", "prompt_token_ids": (p or [9])[:cap],
                     "output_length": rng.randrange(1, 40), "arrival_step": t,
                     "priority": rng.randrange(0, 3)})
    follow_ups(reqs, rng, mml, cap, 0.35)
    if rng.random() < 0.6:
        cfg["groups"] = groups_for(rng, bs)
    finish(cfg, reqs, rng, asyn, rng.choice([0, 1, 3, 10]))
    return cfg, reqs

def space_E(seed, asyn):
    rng = random.Random(seed)
    bs = rng.choice([4, 8, 16])
    mml = rng.choice([97, 129, 160, 255, 200]) 
    cfg = {"block_size": bs, "num_blocks": 4, "max_num_seqs": rng.choice([1, 2, 4, 8]),
           "max_num_batched_tokens": rng.choice([mml, 64, 128, mml + 1, 2 * mml]),
           "max_model_len": mml,
           "long_prefill_token_threshold": rng.choice([0, 0, 1, bs]),
           "policy": rng.choice(["fcfs", "priority"]), "watermark": 0.0,
           "scheduler_reserve_full_isl": rng.choice([True, False]),
           "enable_chunked_prefill": rng.choice([True, True, False]),
           "kv_events": rng.random() < 0.7}
    if not cfg["enable_chunked_prefill"]:
        cfg["max_num_batched_tokens"] = max(cfg["max_num_batched_tokens"], mml)
    base = [rng.randrange(1, 30000) for _ in range(mml)]
    reqs, t = [], 0
    for i in range(rng.randrange(5, 14)):
        t += rng.choice([0, 0, 2])
        kind = rng.random()
        if kind < 0.3:
            L, out = mml - 1, 1
        elif kind < 0.55:
            L = rng.randrange(1, mml); out = mml - L
        elif kind < 0.7:
            L = min(mml - 1, max(1, (mml // bs) * bs - rng.choice([0, 1, bs])))
            out = rng.randrange(1, mml - L + 1)
        else:
            L = rng.randrange(1, mml // 2); out = rng.randrange(1, 30)
        p = base[:L] if rng.random() < 0.6 else [rng.randrange(1, 30000) for _ in range(L)]
        reqs.append({"id": f"E{seed}r{i}", "prompt_token_ids": p, "output_length": out,
                     "arrival_step": t, "priority": rng.randrange(0, 3)})
    if rng.random() < 0.5:
        cfg["groups"] = groups_for(rng, bs)
    finish(cfg, reqs, rng, asyn, rng.choice([0, 0, 1]))
    return cfg, reqs

def space_P(seed, asyn):
    """tiny budgets with pressure: budget 3-9, max_num_seqs up to the budget, small mml,
    tight pool"""
    rng = random.Random(seed)
    bs = rng.choice([2, 4, 8])
    budget = rng.randint(3, 9)
    mml = rng.choice([48, 64, 96])
    cfg = {"block_size": bs, "num_blocks": 4, "max_num_seqs": rng.randint(2, budget),
           "max_num_batched_tokens": budget, "max_model_len": mml,
           "long_prefill_token_threshold": rng.choice([0, 0, 1, 2, bs]),
           "policy": rng.choice(["fcfs", "priority"]),
           "watermark": 0.0, "scheduler_reserve_full_isl": rng.choice([True, False]),
           "enable_chunked_prefill": True, "kv_events": rng.random() < 0.7}
    cap = mml - 20
    shared = [rng.randrange(1, 30000) for _ in range(rng.randrange(bs, 3 * bs + 3))]
    reqs, t = [], 0
    for i in range(rng.randrange(8, 20)):
        t += rng.choice([0, 0, 1, 3])
        p = list(shared[: rng.randrange(1, len(shared) + 1)]) if rng.random() < 0.6 else []
        p += [rng.randrange(1, 30000) for _ in range(rng.randrange(0, 24))]
        reqs.append({"id": f"P{seed}r{i}", "prompt_token_ids": (p or [5])[:cap],
                     "output_length": rng.randrange(1, 20), "arrival_step": t,
                     "priority": rng.randrange(0, 3)})
    follow_ups(reqs, rng, mml, cap, 0.35)
    if rng.random() < 0.7:
        cfg["groups"] = groups_for(rng, bs)
    finish(cfg, reqs, rng, asyn, rng.choice([0, 0, 1]))
    return cfg, reqs

def add_knobs(cfg, seed):
    rng = random.Random(seed * 104729 + 5)
    cfg["enable_prefix_caching"] = rng.choice([False, True, True])
    if rng.random() < 0.6:
        cfg["max_num_active_seqs"] = rng.randrange(1, cfg["max_num_seqs"] + 1)
    cfg["long_prefill_token_threshold_adaptive"] = rng.choice([True, False])
    if cfg["long_prefill_token_threshold_adaptive"] and rng.random() < 0.7:
        cfg["long_prefill_token_threshold"] = rng.choice([1, 3, 8, 24, 40])
    cfg["hash_algo"] = rng.choice(["sha256", "sha256_cbor", "xxhash", "xxhash_cbor"])
    if any(g["type"] == "sliding_window" for g in cfg.get("groups", ())):
        bs = cfg["block_size"]
        cfg["prefix_cache_retention_interval"] = rng.choice([0, None, bs, 2 * bs, 3 * bs, 5 * bs])

def space_H(seed, asyn):
    global NRANGE
    NRANGE = (200, 501)
    try:
        return space_L(seed, asyn)
    finally:
        NRANGE = (40, 101)

SPACES = {"H": space_H, "P": space_P, "L": space_L, "T": space_T, "B": space_B, "E": space_E}

if __name__ == "__main__":
    knobs = "--knobs" in sys.argv
    argv = [a for a in sys.argv if a != "--knobs"]
    space, out, seeds = argv[1], argv[2], argv[3:]
    os.makedirs(out, exist_ok=True)
    for s in seeds:
        s = int(s)
        asyn = s % 2 == 1
        cfg, reqs = SPACES[space](s, asyn)
        if knobs:
            add_knobs(cfg, s)
        name = f"{'k' if knobs else ''}{space}{'a' if asyn else 's'}{s}"
        with open(f"{out}/{name}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)
