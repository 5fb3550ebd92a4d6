"""Dev tool (not a test): CPU-tier traces over Mamba groups, for the oracle's `sched_offload`
patched by `../offload_hybrid/patch_oracle_hybrid.py` then `patch_oracle_mamba.py` (README.md
here).

    python3 tests/data/offload_mamba/make_cases.py OUT_DIR SEED...

Case `omNNN` is seeded by NNN (random.Random(NNN * 7919 + 23)). Groups (`groups`): 1-3 Mamba
groups (Jamba's `{"type": "mamba"}`, or four times in ten Mamba2's `{"type": "mamba",
"checkpoint": true}`, all alike as in a real model) with one full-attention group at a random
place, or one time in ten no full-attention group; block 8, 16 or 32; 1 or 2 blocks a chunk; a
pool from just what one max_model_len request needs (vLLM's start-up check) to 40 blocks more;
a tier of 8-160 chunks; CacheConfig's prefix_cache_retention_interval 0 (default), null
(dense) or two chunks; LRU/ARC, store and load latencies, KV events, sync-load budgets, store
thresholds, prompt-only off, async half the time. Requests: a few shared documents of 1-6
chunks sent again (whole, extended, cut) between fresh prompts that push them out of the
small GPU pool, so later ones hit the CPU tier.
"""

import json
import random
import sys
from collections.abc import Callable

CHUNK_BYTES_1BLK = 2 * 8 * 128 * 2 * 32     # default geometry, one group, per token


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def make(seed: int) -> tuple[dict, list[dict]]:
    rng = random.Random(seed * 7919 + 23)
    bs = rng.choice([8, 16, 16, 32])
    bpc = rng.choice([1, 1, 1, 2])
    nm = rng.choice([1, 2, 3])
    ckpt = rng.random() < 0.4
    m = {"type": "mamba", "checkpoint": True} if ckpt else {"type": "mamba"}
    groups = [dict(m) for _ in range(nm)]
    nfull = 0 if rng.random() < 0.1 else 1
    if nfull:
        groups.insert(rng.randrange(nm + 1), {"type": "full"})
    mml = 16 * bs
    need = nm * (3 if ckpt else 2) + nfull * cdiv(mml, bs)
    is_async = rng.random() < 0.5
    cfg = {
        "block_size": bs, "num_blocks": need + 1 + rng.choice([0, 4, 12, 40]),
        "max_model_len": mml, "max_num_seqs": rng.choice([2, 4, 8]),
        "max_num_batched_tokens": rng.choice([2, 4, 8]) * bs, "groups": groups,
        "kv_offloading_size_chunks": rng.choice([8, 16, 32, 64, 160]),
        "eviction_policy": rng.choice(["lru", "arc"]),
        "load_steps": rng.choice([1, 1, 2, 3]),
        "store_steps": rng.choice([1, 1, 2, 3]),
        "kv_events": rng.random() < 0.3,
    }
    if bpc > 1:
        cfg["offload_block_size"] = bpc * bs
    r = rng.random()
    if r < 0.2:
        cfg["prefix_cache_retention_interval"] = None
    elif r < 0.4:
        cfg["prefix_cache_retention_interval"] = 2 * bpc * bs
    if rng.random() < 0.1:
        cfg["store_threshold"] = 2
    if rng.random() < 0.1:
        cfg["offload_prompt_only"] = False
    if rng.random() < 0.15:
        cfg["sync_load_budget_bytes"] = rng.choice([2, 8, 32]) * bs * CHUNK_BYTES_1BLK
    if is_async:
        cfg["async_scheduling"] = True
    if rng.random() < 0.25:
        cfg["policy"] = rng.choice(["fcfs", "priority"])
    return cfg, requests(rng, seed, bs * bpc, mml, cfg.get("policy") == "priority")


def chunked_doc(rng: random.Random, c: int) -> int:
    """A shared document's length here: 1-5 whole chunks of `c` tokens and a part of one."""
    return rng.randrange(1, 6) * c + rng.randrange(0, c)


def requests(rng: random.Random, seed: int, c: int, mml: int, prio: bool, *,
             prefix: str = "m", doc_len: Callable[[random.Random, int], int] = chunked_doc,
             most: int = 17, fresh_chunks: int = 6) -> list[dict]:
    """The requests of a case with chunks of `c` tokens, ids `{prefix}{seed}r{i}`: shared
    documents (`doc_len` draws each one's length) sent again whole, extended or cut, between
    fresh prompts of up to `fresh_chunks` chunks; 8 to `most` requests. Shared with
    ../offload_mamba_partial/make_cases.py, whose kept cases draw their own lengths and counts
    (each folder's cases redraw byte for byte: the draws are the same calls in the same order)."""
    def fresh(n: int) -> list[int]:
        return [rng.randrange(1, 30000) for _ in range(n)]
    docs = [fresh(doc_len(rng, c)) for _ in range(rng.randrange(2, 4))]
    reqs, step = [], 0
    for i in range(rng.randrange(8, most + 1)):
        r = rng.random()
        if r < 0.35:
            p = list(rng.choice(docs))
        elif r < 0.6:
            p = list(rng.choice(docs)) + fresh(rng.randrange(1, 2 * c + 2))
        elif r < 0.7:
            d = rng.choice(docs)
            p = d[:rng.randrange(1, len(d) + 1)]
        else:
            p = fresh(rng.randrange(1, fresh_chunks * c + 2))
        p = p[: max(1, mml - 10)]
        out = rng.randrange(1, max(2, min(12, mml - len(p))))
        step += rng.choice([0, 0, 1, 3, 8])
        d = {"id": f"{prefix}{seed}r{i}", "prompt_token_ids": p, "output_length": out,
             "arrival_step": step}
        if prio:
            d["priority"] = rng.randrange(0, 3)
        reqs.append(d)
    return reqs


if __name__ == "__main__":
    out, seeds = sys.argv[1], sys.argv[2:]
    for s in seeds:
        cfg, reqs = make(int(s))
        with open(f"{out}/om{s}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)
