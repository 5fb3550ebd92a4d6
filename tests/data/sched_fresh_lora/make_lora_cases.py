"""Fidelity campaign generator (2026-12-05). usage: python make_lora_cases.py SPACE OUT SEED...
odd seeds async, even sync.
  R: LoRA adapters + cache salts (hash domains), sched oracle (patched copy), +- hybrid groups
  O: CPU tier (sched_offload, patched copy) with LoRA/salt, priority, preemptions
  X: extreme block sizes 128 / 256 with hybrid groups
  D: many simultaneous arrivals, duplicate block-aligned prompts, output 1, max_num_seqs 1,
     budget == block size, negative / huge priorities, token id 0
"""
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for d in ("sched_fresh", "sched_fresh_hybrid", "offload_fresh"):
    sys.path.insert(0, os.path.join(HERE, "..", d))
import make_traces as MT
from make_spaces import finish, follow_ups, groups_for

LORAS = ["sql", "chat", "code", "a/b"]
SALTS = ["t1", "t2", "é"]

def domains(reqs, rng, p_lora=0.5, p_salt=0.3):
    nl = rng.randint(1, 4)
    for r in reqs:
        if rng.random() < p_lora:
            r["lora"] = rng.choice(LORAS[:nl])
        if rng.random() < p_salt:
            r["cache_salt"] = rng.choice(SALTS)

def follow_domain(reqs, rng):
    # follow-ups (prompt that extends an earlier one) keep the earlier's domain most often
    for i, r in enumerate(reqs):
        for j in range(i):
            s = reqs[j]["prompt_token_ids"]
            if len(s) > 4 and r["prompt_token_ids"][:len(s)] == s and rng.random() < 0.7:
                for k in ("lora", "cache_salt"):
                    if k in reqs[j]: r[k] = reqs[j][k]
                    else: r.pop(k, None)
                break

def space_R(seed, asyn):
    rng = random.Random(seed)
    bs = rng.choice([4, 8, 16])
    mml = rng.choice([256, 384])
    cfg = {"block_size": bs, "num_blocks": 8, "max_num_seqs": rng.choice([2, 4, 8, 16]),
           "max_num_batched_tokens": rng.choice([32, 64, 128, 256]), "max_model_len": mml,
           "long_prefill_token_threshold": rng.choice([0, 0, 16]),
           "policy": rng.choice(["fcfs", "priority"]), "watermark": rng.choice([0.0, 0.04]),
           "scheduler_reserve_full_isl": rng.choice([True, False]),
           "enable_chunked_prefill": rng.choice([True, True, False]),
           "kv_events": rng.random() < 0.8}
    if rng.random() < 0.25:
        cfg["hash_algo"] = "sha256_cbor"
    if not cfg["enable_chunked_prefill"]:
        cfg["max_num_batched_tokens"] = max(cfg["max_num_batched_tokens"], mml)
    cap = mml - 60
    prefixes = [[rng.randrange(1, 30000) for _ in range(rng.randrange(bs, 100))] for _ in range(3)]
    reqs, t = [], 0
    for i in range(rng.randrange(10, 40)):
        t += rng.choice([0, 0, 1, 3])
        p = list(rng.choice(prefixes)) if rng.random() < 0.75 else []
        p += [rng.randrange(1, 30000) for _ in range(rng.randrange(0, 40))]
        reqs.append({"id": f"R{seed}r{i}", "prompt_token_ids": (p or [7])[:cap],
                     "output_length": rng.randrange(1, 40), "arrival_step": t,
                     "priority": rng.randrange(0, 3)})
    follow_ups(reqs, rng, mml, cap, 0.35)
    domains(reqs, rng)
    follow_domain(reqs, rng)
    if rng.random() < 0.4 or seed >= 60100:   # 60100+: always hybrid groups
        cfg["groups"] = groups_for(rng, bs)
    finish(cfg, reqs, rng, asyn, rng.choice([0, 1, 3, 10]))
    return cfg, reqs

def space_O(seed, asyn):
    cfg, reqs = MT.make(seed, long=(seed % 4 == 1))
    rng = random.Random(seed * 31 + 7)
    domains(reqs, rng, 0.5, 0.3)
    follow_domain(reqs, rng)
    if rng.random() < 0.5:
        cfg["policy"] = "priority"
        for r in reqs: r["priority"] = rng.randrange(-2, 3)
    if asyn: cfg["async_scheduling"] = True
    return cfg, reqs

def space_X(seed, asyn):
    rng = random.Random(seed)
    bs = rng.choice([128, 256])
    mml = rng.choice([4, 6, 8]) * bs + rng.choice([0, 0, -1, 1, 37])
    cfg = {"block_size": bs, "num_blocks": 4, "max_num_seqs": rng.choice([1, 2, 4, 8]),
           "max_num_batched_tokens": rng.choice([bs, bs // 2, bs + 1, 2 * bs, mml, 100]),
           "max_model_len": mml,
           "long_prefill_token_threshold": rng.choice([0, 0, bs, 50]),
           "policy": rng.choice(["fcfs", "priority"]), "watermark": 0.0,
           "scheduler_reserve_full_isl": rng.choice([True, False]),
           "enable_chunked_prefill": rng.choice([True, True, True, False]),
           "kv_events": rng.random() < 0.7}
    if not cfg["enable_chunked_prefill"]:
        cfg["max_num_batched_tokens"] = max(cfg["max_num_batched_tokens"], mml)
    cap = mml - 2
    prefixes = [[rng.randrange(1, 30000) for _ in range(rng.randrange(bs // 2, 3 * bs))] for _ in range(3)]
    reqs, t = [], 0
    for i in range(rng.randrange(5, 16)):
        t += rng.choice([0, 0, 1, 4])
        p = list(rng.choice(prefixes)) if rng.random() < 0.7 else []
        p += [rng.randrange(1, 30000) for _ in range(rng.randrange(0, bs + 3))]
        reqs.append({"id": f"X{seed}r{i}", "prompt_token_ids": (p or [3])[:cap],
                     "output_length": rng.randrange(1, 2 * bs), "arrival_step": t,
                     "priority": rng.randrange(0, 3)})
    follow_ups(reqs, rng, mml, cap, 0.35)
    if rng.random() < 0.75:
        def g():
            return groups_for(rng, bs)
        gg = g()
        # windows/chunks in this space: also small ones relative to the 128/256 block
        for x in gg:
            if x["type"] == "sliding_window" and rng.random() < 0.4:
                x["sliding_window"] = rng.choice([1, 17, 100, bs - 1, bs + 1, 300])
            if x["type"] == "chunked_local" and rng.random() < 0.4:
                x["attention_chunk_size"] = rng.choice([bs, 2 * bs, bs + 1])
        cfg["groups"] = gg
    if rng.random() < 0.3:
        domains(reqs, rng, 0.4, 0.2)
    finish(cfg, reqs, rng, asyn, rng.choice([0, 0, 1, 2]))
    return cfg, reqs

def space_D(seed, asyn):
    rng = random.Random(seed)
    bs = rng.choice([2, 4, 8, 16, 32])
    mml = rng.choice([64, 128, 200])
    seqs = rng.choice([1, 1, 2, 3, 64])
    budget = rng.choice([bs, bs, 2 * bs, 64, mml])
    if seed >= 63100:
        seqs = min(seqs, budget)   # vLLM refuses max_num_seqs > budget (drawn 63000-63039)
    cfg = {"block_size": bs, "num_blocks": 4, "max_num_seqs": seqs,
           "max_num_batched_tokens": budget, "max_model_len": mml,
           "long_prefill_token_threshold": rng.choice([0, 0, 1, bs]),
           "policy": rng.choice(["fcfs", "priority", "priority"]), "watermark": 0.0,
           "scheduler_reserve_full_isl": rng.choice([True, False]),
           "enable_chunked_prefill": True if budget < mml else rng.choice([True, False]),
           "kv_events": rng.random() < 0.6}
    if rng.random() < 0.3:
        cfg["enable_prefix_caching"] = False
    base = [rng.randrange(0, 3) if rng.random() < 0.2 else rng.randrange(1, 30000) for _ in range(mml)]
    lens = [bs * k for k in range(1, (mml - 1) // bs + 1)] + [1, 2, bs - 1, bs + 1, mml - 1]
    reqs = []
    n = rng.randrange(20, 120)
    burst = rng.choice([0, 0, 1, 2])
    for i in range(n):
        L = max(1, min(mml - 1, rng.choice(lens)))
        p = base[:L] if rng.random() < 0.8 else [rng.randrange(0, 30000) for _ in range(L)]
        out = 1 if rng.random() < 0.5 else rng.randrange(1, max(2, min(20, mml - L + 1)))
        out = max(1, min(out, mml - L))
        reqs.append({"id": f"D{seed}r{i}", "prompt_token_ids": p, "output_length": out,
                     "arrival_step": 0 if burst == 0 else (i // 30) * burst * 5,
                     "priority": rng.choice([0, 0, -1, -5, 1, 2, 10**6, -10**6])})
    follow_ups(reqs, rng, mml, mml - 2, 0.15)
    if rng.random() < 0.4:
        cfg["groups"] = groups_for(rng, bs)
    if rng.random() < 0.25:
        domains(reqs, rng, 0.3, 0.3)
    finish(cfg, reqs, rng, asyn, rng.choice([0, 0, 1, 4]))
    return cfg, reqs

import make_spaces as MS


def space_N(seed, asyn):
    """500-900 requests, small pools (space_L's draws), a third with LoRA / salts"""
    MS.NRANGE = (500, 901)
    try:
        cfg, reqs = MS.space_L(seed, asyn)
    finally:
        MS.NRANGE = (40, 101)
    rng = random.Random(seed * 13 + 5)
    if rng.random() < 0.35:
        domains(reqs, rng, 0.4, 0.2); follow_domain(reqs, rng)
    return cfg, reqs

def space_OB(seed, asyn):
    """CPU tier, bursts: 3-6 copies of make_traces' requests (ids renamed), arrivals in 1-3
    bursts, max_num_seqs 1 .. 8, priorities, LoRA / salts"""
    cfg, base = MT.make(seed, long=False)
    rng = random.Random(seed * 17 + 3)
    k = rng.randint(3, 6)
    bursts = rng.choice([[0], [0, 5], [0, 2, 30]])
    reqs = []
    for c in range(k):
        for r in base:
            q = dict(r); q["id"] = f"{r['id']}c{c}"; q["arrival_step"] = rng.choice(bursts)
            reqs.append(q)
    reqs.sort(key=lambda r: r["arrival_step"])
    cfg["max_num_seqs"] = rng.choice([1, 1, 2, 8])
    if rng.random() < 0.6:
        cfg["policy"] = "priority"
        for r in reqs: r["priority"] = rng.choice([0, 0, 1, -1, 5])
    if rng.random() < 0.5:
        domains(reqs, rng, 0.4, 0.2)
    if asyn: cfg["async_scheduling"] = True
    return cfg, reqs

def space_RX(seed, asyn):
    """space_R with xxhash / xxhash_cbor; hash_seed '0' (oracle answered under PYTHONHASHSEED=0)"""
    cfg, reqs = space_R(seed, asyn)
    cfg["hash_algo"] = random.Random(seed).choice(["xxhash", "xxhash_cbor"])
    cfg["kv_events"] = True
    return cfg, reqs

def space_RS(seed, asyn):
    """space_R (hybrid from 60100 on), request lines shuffled in the file (arrival steps kept):
    LoRA ids by file order, output tokens by file index, ties at a step in file order"""
    cfg, reqs = space_R(seed, asyn)
    random.Random(seed * 3 + 1).shuffle(reqs)
    return cfg, reqs

def space_OL(seed, asyn):
    """space_O with long outputs (to 200 tokens) in both modes, priority policy always"""
    cfg, reqs = MT.make(seed, long=True)
    rng = random.Random(seed * 29 + 1)
    domains(reqs, rng, 0.5, 0.3); follow_domain(reqs, rng)
    cfg["policy"] = "priority"
    for r in reqs: r["priority"] = rng.randrange(-2, 3)
    if asyn: cfg["async_scheduling"] = True
    return cfg, reqs

SPACES = {"OL": space_OL, "RS": space_RS, "OB": space_OB, "RX": space_RX, "N": space_N, "R": space_R, "O": space_O, "X": space_X, "D": space_D}
if __name__ == "__main__":
    space, out, seeds = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    for s in seeds:
        s = int(s); asyn = s % 2 == 1
        cfg, reqs = SPACES[space](s, asyn)
        name = f"f{space}{'a' if asyn else 's'}{s}"
        with open(f"{out}/{name}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)
