"""Dev tool (not a test): CPU-tier traces over ONE sliding-window or chunked-local KV cache
group and nothing else, for the oracle's `sched_offload` patched by `patch_oracle_hybrid.py`
then `../offload_mamba/patch_oracle_mamba.py` (which adds the config key
`prefix_cache_retention_interval`; without a Mamba group it changes nothing else). README.md
here, "One windowed group alone".

    python3 tests/data/offload_hybrid/make_alone.py OUT_DIR SEED...

Case `waNNN` is seeded by NNN: block sizes 1-4, 8, 16; a window of 1-12 blocks (some off a
block multiple) or an attention chunk of 1-8 blocks; chunks of 1 or 2 blocks; small pools
(8-64 blocks, more for tiny blocks) and tiers (1-80 chunks); retention interval vLLM's default
0, one or two chunks, a few dense (null) and a few not a chunk multiple (vLLM refuses to
start); sync and async; the wide draw's requests, knobs, budgets and thresholds.
"""

import json
import random
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from make_cases import CHUNK_BYTES_1BLK, needed_blocks
from wide import requests


def draw_group(rng: random.Random, bs: int) -> dict:
    if rng.random() < 0.6:
        w = rng.choice([1, 2, 3, 4, 5, 8, 12]) * bs
        if rng.random() < 0.3:
            w += rng.choice([-1, 1, bs // 2 or 1])
        return {"type": "sliding_window", "sliding_window": max(1, w)}
    return {"type": "chunked_local", "attention_chunk_size": rng.choice([1, 2, 4, 6, 8]) * bs}


def make(seed: int) -> tuple[dict, list[dict]]:
    rng = random.Random(seed * 6007 + 3)
    bs = rng.choice([1, 2, 3, 4, 8, 16])
    bpc = rng.choice([1, 1, 2])
    groups = [draw_group(rng, bs)]
    num_blocks = rng.choice([8, 12, 16, 24, 32, 64])
    if bs <= 3:
        num_blocks *= rng.choice([2, 4])
    is_async = rng.random() < 0.5
    chunked = rng.random() < 0.85
    mnbt = rng.choice([2, 4, 8, 16]) * max(bs, 4)
    mml = rng.choice([4, 8, 16, 32]) * bs * bpc
    while mml > 2 * bs and needed_blocks(groups, mml, bs, 2 * mnbt) + 2 > num_blocks - 1:
        mml -= bs
    if not chunked:
        mnbt = max(mnbt, mml)
    cfg = {
        "block_size": bs, "num_blocks": num_blocks, "max_model_len": mml,
        "max_num_seqs": min(rng.choice([1, 2, 4, 8]), mnbt),
        "max_num_batched_tokens": mnbt, "groups": groups,
        "kv_offloading_size_chunks": rng.choice([1, 2, 4, 8, 16, 80]),
        "eviction_policy": rng.choice(["lru", "arc"]),
        "load_steps": rng.choice([1, 1, 2, 3]),
        "store_steps": rng.choice([1, 1, 2, 4]),
        "kv_events": rng.choice([True, False]),
    }
    if not chunked:
        cfg["enable_chunked_prefill"] = False
    if bpc > 1:
        cfg["offload_block_size"] = bpc * bs
    r = rng.random()
    if r < 0.3:
        cfg["prefix_cache_retention_interval"] = bs * bpc * rng.choice([1, 2])
    elif r < 0.38:
        cfg["prefix_cache_retention_interval"] = None
    elif r < 0.44 and bpc > 1:
        cfg["prefix_cache_retention_interval"] = bs * (2 * bpc + 1)
    return cfg, knobs_and_requests(rng, cfg, seed, bs, bpc, mml, is_async, "a")


def knobs_and_requests(rng: random.Random, cfg: dict, seed: int, bs: int, bpc: int, mml: int,
                       is_async: bool, prefix: str) -> list[dict]:
    """The tier's knobs (threshold, prompt-only, sync budget, async, policy) set in ``cfg`` and
    the requests, ids prefixed, in the rng's order (`make_dense.py` draws its tail the same)."""
    if rng.random() < 0.3:
        cfg["store_threshold"] = rng.choice([1, 2])
    if rng.random() < 0.4:
        cfg["offload_prompt_only"] = False
    if rng.random() < 0.25:
        cfg["sync_load_budget_bytes"] = rng.choice([1, 2, 8, 32]) * bs * CHUNK_BYTES_1BLK
    if is_async:
        cfg["async_scheduling"] = True
    if rng.random() < 0.3:
        cfg["policy"] = rng.choice(["fcfs", "priority"])
        if rng.random() < 0.4:
            cfg["long_prefill_token_threshold"] = rng.choice([1, 2, 3]) * bs
    reqs = requests(rng, seed, bs * bpc, mml, cfg.get("policy") == "priority",
                    rng.choice([8, 24, 64]))
    for d in reqs:
        d["id"] = prefix + d["id"]
    return reqs


if __name__ == "__main__":
    out, seeds = sys.argv[1], sys.argv[2:]
    for s in seeds:
        cfg, reqs = make(int(s))
        with open(f"{out}/wa{s}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)
