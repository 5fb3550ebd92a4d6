"""Dev tool (not a test): CPU-tier traces with dense retention (`prefix_cache_retention_interval`
null) over windowed KV cache groups, alone or beside full attention and other windows, for the
oracle's `sched_offload` patched by `patch_oracle_hybrid.py` then
`../offload_mamba/patch_oracle_mamba.py` (the retention key). `../offload_dense/README.md`.

    python3 tests/data/offload_hybrid/make_dense.py OUT_DIR SEED...

Case `deNNN` is seeded by NNN (its own stream: `make_alone.py` and `make_cases.py` redraw as
before). Every case is dense. The draw leans on what dense retention changes in the stores: a
sliding window's tail shorter than a chunk (windows of 1-3 blocks, some off a block multiple,
chunks of 2-4 blocks), so a chunk's first blocks may be null where its tail is not; and a few
windows as long as a chunk or longer (every block kept). Layouts: one sliding or chunked-local
group alone, or two or three groups (fs, sf, fss, sfs, fc, cf, fsc, ss, sc); the wide draw's
requests, pools, knobs, budgets and thresholds.

    python3 tests/data/offload_hybrid/make_dense.py --mamba OUT_DIR SEED...

Case `dmNNN`: the same beside an align-mode Mamba group (`{"type": "mamba"}`, a Mamba2 one with
`"checkpoint": true` a third of the time; layouts sm, ms, fsm, msf, fms, smc), blocks of 8-32
tokens and one or two a chunk, as `../offload_mamba/make_cases.py` draws them.
"""

import json
import random
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from make_alone import knobs_and_requests
from make_cases import needed_blocks
from wide import requests

LAYOUTS = ["s", "s", "c", "fs", "fs", "sf", "fss", "sfs", "fc", "cf", "fsc", "ss", "sc"]


def sliding(rng: random.Random, bs: int, bpc: int) -> dict:
    if rng.random() < 0.75:
        w = rng.randrange(1, bpc + 1) * bs       # a tail shorter than (or one) chunk
    else:
        w = rng.choice([1, 2, 3]) * bpc * bs
    if rng.random() < 0.3:
        w += rng.choice([-1, 1, bs // 2 or 1])
    return {"type": "sliding_window", "sliding_window": max(1, w)}


def chunked(rng: random.Random, bs: int) -> dict:
    return {"type": "chunked_local", "attention_chunk_size": rng.choice([1, 2, 4, 6]) * bs}


def draw_groups(rng: random.Random, bs: int, bpc: int, layout: str = "") -> list[dict]:
    """The groups of ``layout`` (f, s, c and m letters; drawn from LAYOUTS when empty)."""
    make_one = {"f": lambda: {"type": "full"}, "s": lambda: sliding(rng, bs, bpc),
                "c": lambda: chunked(rng, bs)}
    if not layout:
        layout = rng.choice(LAYOUTS)
    return [make_one[k]() for k in layout]


def make(seed: int) -> tuple[dict, list[dict]]:
    rng = random.Random(seed * 15485863 + 5)
    bs = rng.choice([1, 2, 3, 4, 8, 16])
    bpc = rng.choice([1, 2, 2, 3, 4])
    groups = draw_groups(rng, bs, bpc)
    num_blocks = rng.choice([16, 24, 32, 64, 96]) * len(groups)
    if bs <= 3:
        num_blocks *= rng.choice([2, 4])
    is_async = rng.random() < 0.5
    chunked = rng.random() < 0.85
    mnbt = rng.choice([2, 4, 8, 16]) * max(bs, 4)
    mml = rng.choice([4, 8, 16, 32]) * bs * bpc
    while mml > 2 * bs and needed_blocks(groups, mml, bs, 2 * mnbt) + 2 * len(groups) \
            > num_blocks - 1:
        mml -= bs
    if not chunked:
        mnbt = max(mnbt, mml)
    cfg = {
        "block_size": bs, "num_blocks": num_blocks, "max_model_len": mml,
        "max_num_seqs": min(rng.choice([1, 2, 4, 8]), mnbt),
        "max_num_batched_tokens": mnbt, "groups": groups,
        "kv_offloading_size_chunks": rng.choice([2, 4, 8, 16, 80]),
        "eviction_policy": rng.choice(["lru", "arc"]),
        "load_steps": rng.choice([1, 1, 2, 3]),
        "store_steps": rng.choice([1, 1, 2, 4]),
        "kv_events": rng.choice([True, False]),
        "prefix_cache_retention_interval": None,
    }
    if not chunked:
        cfg["enable_chunked_prefill"] = False
    if bpc > 1:
        cfg["offload_block_size"] = bpc * bs
    return cfg, knobs_and_requests(rng, cfg, seed, bs, bpc, mml, is_async, "d")


def make_mamba(seed: int) -> tuple[dict, list[dict]]:
    rng = random.Random(seed * 32452843 + 9)
    bs = rng.choice([8, 16, 16, 32])
    bpc = rng.choice([1, 2])
    mamba = {"type": "mamba", "checkpoint": True} if rng.random() < 0.33 else {"type": "mamba"}
    layout = rng.choice(["sm", "ms", "fsm", "msf", "fms", "smc"])
    groups = [dict(mamba) if k == "m" else draw_groups(rng, bs, bpc, k)[0] for k in layout]
    attention = [g for g in groups if g["type"] != "mamba"]
    num_blocks = rng.choice([24, 32, 64, 96]) * len(groups)
    is_async = rng.random() < 0.5
    mnbt = rng.choice([2, 4, 8]) * bs
    mml = rng.choice([8, 16, 32]) * bs * bpc
    while mml > 2 * bs and needed_blocks(attention, mml, bs, 2 * mnbt) + 3 + 2 * len(groups) \
            > num_blocks - 1:
        mml -= bs * bpc
    cfg = {
        "block_size": bs, "num_blocks": num_blocks, "max_model_len": mml,
        "max_num_seqs": rng.choice([2, 4, 8]), "max_num_batched_tokens": mnbt,
        "groups": groups, "kv_offloading_size_chunks": rng.choice([4, 8, 16, 80]),
        "eviction_policy": rng.choice(["lru", "arc"]), "load_steps": rng.choice([1, 1, 2]),
        "store_steps": rng.choice([1, 1, 2, 3]), "kv_events": rng.choice([True, False]),
        "prefix_cache_retention_interval": None,
    }
    if bpc > 1:
        cfg["offload_block_size"] = bpc * bs
    if rng.random() < 0.2:
        cfg["offload_prompt_only"] = False
    if is_async:
        cfg["async_scheduling"] = True
    reqs = requests(rng, seed, bs * bpc, mml, False, rng.choice([8, 24]))
    for d in reqs:
        d["id"] = "m" + d["id"]
    return cfg, reqs


if __name__ == "__main__":
    mamba = sys.argv[1] == "--mamba"
    out, seeds = sys.argv[1 + mamba], sys.argv[2 + mamba:]
    for s in seeds:
        cfg, reqs = make_mamba(int(s)) if mamba else make(int(s))
        with open(f"{out}/{'dm' if mamba else 'de'}{s}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)
