"""Dev tool (not a test): CPU-tier traces over Mamba groups whose block is coarser than the
hash block (`prefix_match_unit`), for the oracle's `sched_offload` patched by
`../offload_hybrid/patch_oracle_hybrid.py`, `../offload_mamba/patch_oracle_mamba.py` and
`patch_oracle_partial.py` (README.md here).

    python3 tests/data/offload_mamba_partial/make_cases.py OUT_DIR SEED...

Case `mpNNN` is seeded by NNN (random.Random(NNN * 7907 + 61)). The layout is a real hybrid
model's in small: the block is the Mamba page's (80 as Jamba's with the 16-token unit; 48, 64
or 32 with a unit of 16 or 8), every group at that block; 1-3 Mamba groups (Jamba's
`{"type": "mamba"}`, or three times in ten Mamba2's with a prefill checkpoint), or seven and a
full group after them as `jamba-v0.1` has, with one full-attention group (one time in ten none);
the unit finer than the block eight times in ten, else left out (the hash block is then the
block: kvcli's default for a real model); one block a chunk (partial tails on) seven times in
eight, else two. A pool from what one max_model_len request needs to 30 blocks more; a tier of
6-120 chunks; retention 0, null (dense) or two chunks; LRU/ARC, latencies, KV events, sync
loads, store thresholds, prompt-only off, async half the time. Requests: shared documents of
any length (so that prompts end inside blocks) sent again whole, extended or cut, between
fresh prompts that push them out of the small GPU pool.
"""

import importlib.util
import json
import random
import sys
from pathlib import Path

CHUNK_BYTES_1BLK = 2 * 8 * 128 * 2 * 32     # default geometry, one group, per token


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def make(seed: int) -> tuple[dict, list[dict]]:
    rng = random.Random(seed * 7907 + 61)
    bs, unit = rng.choice([(80, 16), (80, 16), (48, 16), (64, 16), (32, 8), (32, 16)])
    if rng.random() < 0.2:
        unit = None
    bpc = 1 if rng.random() < 0.875 else 2
    ckpt = rng.random() < 0.3
    m = {"type": "mamba", "checkpoint": True} if ckpt else {"type": "mamba"}
    if rng.random() < 0.15:
        groups = [dict(m) for _ in range(7)] + [{"type": "full"}]
        nm, nfull = 7, 1
    else:
        nm = rng.choice([1, 2, 3])
        groups = [dict(m) for _ in range(nm)]
        nfull = 0 if rng.random() < 0.1 else 1
        if nfull:
            groups.insert(rng.randrange(nm + 1), {"type": "full"})
    mml = 8 * bs
    need = nm * (3 if ckpt else 2) + nfull * cdiv(mml, bs)
    is_async = rng.random() < 0.5
    cfg = {
        "block_size": bs, "num_blocks": need + 1 + rng.choice([0, 3, 8, 30]),
        "max_model_len": mml, "max_num_seqs": rng.choice([2, 4, 8]),
        "max_num_batched_tokens": rng.choice([1, 2, 4]) * bs, "groups": groups,
        "kv_offloading_size_chunks": rng.choice([6, 12, 24, 48, 120]),
        "eviction_policy": rng.choice(["lru", "arc"]),
        "load_steps": rng.choice([1, 1, 2, 3]),
        "store_steps": rng.choice([1, 1, 2, 3]),
        "kv_events": rng.random() < 0.25,
    }
    if unit is not None:
        cfg["prefix_match_unit"] = unit
    if bpc > 1:
        cfg["offload_block_size"] = bpc * bs
    r = rng.random()
    if r < 0.15:
        cfg["prefix_cache_retention_interval"] = None
    elif r < 0.3:
        cfg["prefix_cache_retention_interval"] = 2 * bpc * bs
    if rng.random() < 0.1:
        cfg["store_threshold"] = 2
    if rng.random() < 0.1:
        cfg["offload_prompt_only"] = False
    if rng.random() < 0.15:
        cfg["sync_load_budget_bytes"] = rng.choice([2, 8, 32]) * bs * CHUNK_BYTES_1BLK
    if is_async:
        cfg["async_scheduling"] = True
    if rng.random() < 0.2:
        cfg["policy"] = rng.choice(["fcfs", "priority"])
    return cfg, requests(rng, seed, bs * bpc, mml, cfg.get("policy") == "priority")


def _load_mamba_cases():
    """../offload_mamba/make_cases.py, loaded by file (its name is this module's)."""
    spec = importlib.util.spec_from_file_location(
        "offload_mamba_cases", Path(__file__).resolve().parent.parent / "offload_mamba"
        / "make_cases.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MAMBA_CASES = _load_mamba_cases()


def requests(rng: random.Random, seed: int, c: int, mml: int, prio: bool) -> list[dict]:
    """../offload_mamba's requests, with documents of any length (so that prompts end inside
    blocks), fresh prompts of up to 4 chunks, 8-15 requests."""
    return MAMBA_CASES.requests(rng, seed, c, mml, prio, prefix="p",
                                doc_len=lambda rng, c: rng.randrange(1, 5 * c), most=15,
                                fresh_chunks=4)


if __name__ == "__main__":
    out, seeds = sys.argv[1], sys.argv[2:]
    for s in seeds:
        cfg, reqs = make(int(s))
        with open(f"{out}/mp{s}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)
