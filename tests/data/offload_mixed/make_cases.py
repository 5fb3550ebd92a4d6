# ruff: noqa
"""Dev tool (not a test): CPU-tier traces over KV cache groups of several block sizes, for the
oracle's `sched_offload` patched by ../offload_hybrid/, ../offload_mamba/,
../offload_mamba_partial/ and `patch_oracle_mixed.py` (README.md here).

    python3 tests/data/offload_mixed/make_cases.py [--retention | --decode] OUT_DIR SEED...

Case `oxNNN` is seeded by NNN (random.Random(NNN * 6151 + 41)). The config line's block B is
8, 16 or 32; 1-3 attention groups (full, or a sliding window of 1-4 x B + 0-B tokens), at
groups of at least two sizes (B, B/2, 2B or 4B), and three times in ten 1-2 Mamba groups at
B (Jamba's, or Mamba2's with a checkpoint); one time in eight `offload_block_size` (vLLM
asserts over several sizes); a pool from about what one max_model_len request needs to 40
blocks more (vLLM's start-up check refuses the short ones); a tier of 8-160 chunks; LRU/ARC,
store and load latencies, KV events, store thresholds, prompt-only off, sync-load budgets,
async half the time. Requests: ../offload_mamba/make_cases.py's `requests` (shared documents
sent again between fresh prompts that push them out of the small GPU pool) over chunks of the
groups' lcm. With `--retention` (case `oxrNNN`) the config line also sets
prefix_cache_retention_interval: null (dense) half the time, else one or two lcm chunks. With
`--decode` (case `oxdNNN`) dense retention, prompt-only off and outputs of up to three lcm
chunks, so that stores run past the prompt.
"""

import importlib.util
import json
import math
import random
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "om_cases", Path(__file__).resolve().parent.parent / "offload_mamba" / "make_cases.py")
om = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(om)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def make(seed: int, retention: bool = False, decode: bool = False) -> tuple[dict, list[dict]]:
    rng = random.Random(seed * 6151 + 41)
    bs = rng.choice([8, 16, 16, 32])
    groups = []
    for _ in range(rng.choice([1, 2, 2, 3])):
        g = {"type": "full"} if rng.random() < 0.5 else {
            "type": "sliding_window",
            "sliding_window": rng.randrange(1, 5) * bs + rng.randrange(0, bs + 1)}
        if rng.random() < 0.6:
            g["block_size"] = rng.choice([bs // 2, 2 * bs, 2 * bs, 4 * bs])
        groups.append(g)
    if len({g.get("block_size", bs) for g in groups}) < 2:
        have = groups[0].get("block_size", bs)
        groups.append({"type": "full", "block_size": rng.choice(
            [n for n in (bs, bs // 2, 2 * bs, 4 * bs) if n != have])})
    if rng.random() < 0.3:
        ckpt = rng.random() < 0.4
        for _ in range(rng.choice([1, 2])):
            groups.insert(rng.randrange(len(groups) + 1),
                          {"type": "mamba", "checkpoint": True} if ckpt else {"type": "mamba"})
    sizes = [g.get("block_size", bs) for g in groups]
    unit = math.lcm(*sizes)
    mml = max(16 * bs, 4 * unit)
    mnbt = max(rng.choice([2, 4, 8]) * bs, unit)
    need = 0
    for g, s in zip(groups, sizes):
        if g["type"] == "full":
            need += cdiv(mml, s)
        elif g["type"] == "sliding_window":
            need += min(cdiv(mml, s), cdiv(g["sliding_window"] - 1 + mnbt, s) + 1)
        else:
            need += 3 if g.get("checkpoint") else 2
    cfg = {
        "block_size": bs, "num_blocks": need + 1 + rng.choice([0, 4, 12, 40]),
        "max_model_len": mml, "max_num_seqs": rng.choice([2, 4, 8]),
        "max_num_batched_tokens": mnbt, "groups": groups,
        "kv_offloading_size_chunks": rng.choice([8, 16, 32, 64, 160]),
        "eviction_policy": rng.choice(["lru", "arc"]),
        "load_steps": rng.choice([1, 1, 2, 3]),
        "store_steps": rng.choice([1, 1, 2, 3]),
        "kv_events": rng.random() < 0.3,
    }
    if rng.random() < 0.125:
        cfg["offload_block_size"] = rng.choice([1, 2]) * unit
    if rng.random() < 0.1:
        cfg["store_threshold"] = 2
    if rng.random() < 0.1:
        cfg["offload_prompt_only"] = False
    if rng.random() < 0.15:
        cfg["sync_load_budget_bytes"] = rng.choice([2, 8, 32]) * bs * om.CHUNK_BYTES_1BLK
    if rng.random() < 0.5:
        cfg["async_scheduling"] = True
    if rng.random() < 0.2:
        cfg["policy"] = rng.choice(["fcfs", "priority"])
    reqs = om.requests(rng, seed, unit, mml, cfg.get("policy") == "priority", prefix="x")
    if retention:
        # (drawn last: a seed's other draws are those of the plain case)
        cfg["prefix_cache_retention_interval"] = rng.choice([None, None, unit, 2 * unit])
    if decode:
        # (a window group's final tail past the prompt: decode stored, dense retention)
        cfg.update(offload_prompt_only=False, prefix_cache_retention_interval=None)
        for r in reqs:
            r["output_length"] = max(r["output_length"], min(3 * unit, mml - len(
                r["prompt_token_ids"]) - 1))
    return cfg, reqs


if __name__ == "__main__":
    flag = sys.argv[1] if sys.argv[1] in ("--retention", "--decode") else ""
    out, seeds = sys.argv[1 + bool(flag)], sys.argv[2 + bool(flag):]
    for s in seeds:
        cfg, reqs = make(int(s), flag == "--retention", flag == "--decode")
        with open(f"{out}/ox{flag[2:3]}{s}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)
