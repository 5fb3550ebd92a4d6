"""Dev tool (not a test): `make_cases.py --wide`, a wider draw of CPU-tier traces over hybrid
KV cache groups than `make_cases.make` (whose seeds 1-60 it leaves as they were)."""

import random

from make_cases import CHUNK_BYTES_1BLK, needed_blocks


def draw_groups(rng: random.Random, bs: int) -> list[dict]:
    def win() -> int:
        w = rng.choice([1, 2, 3, 4, 5, 8, 12, 20]) * bs
        if rng.random() < 0.3:
            w += rng.choice([-1, 1, bs // 2 or 1])
        return max(1, w)

    def s() -> dict:
        return {"type": "sliding_window", "sliding_window": win()}

    def c() -> dict:
        return {"type": "chunked_local", "attention_chunk_size": rng.choice([1, 2, 4, 6, 8]) * bs}
    f = {"type": "full"}
    kind = rng.choice(["fs", "sf", "fss", "sfs", "fc", "cf", "fsc", "ffs", "fcc"])
    return [{"f": lambda: dict(f), "s": s, "c": c}[k]() for k in kind]


def make_wide(seed: int) -> tuple[dict, list[dict]]:
    rng = random.Random(seed * 104729 + 7)
    bs = rng.choice([1, 2, 3, 4, 8, 16, 16, 32])
    bpc = rng.choice([1, 1, 2, 3, 4])
    groups = draw_groups(rng, bs)
    pressure = rng.random() < 0.3
    num_blocks = rng.choice([16, 24, 32] if pressure else [32, 64, 96, 160, 256, 400])
    if bs <= 3:
        num_blocks *= rng.choice([2, 4])
    is_async = rng.random() < 0.5
    chunked = rng.random() < 0.8
    mnbt = rng.choice([2, 4, 8, 16, 32]) * max(bs, 4)
    mml = (num_blocks // len(groups)) * bs
    while mml > 2 * bs and needed_blocks(groups, mml, bs, 2 * mnbt) + 2 * len(groups) \
            > num_blocks - 1:
        mml -= bs
    if not chunked:
        mnbt = max(mnbt, mml)
    cfg = {
        "block_size": bs, "num_blocks": num_blocks, "max_model_len": mml,
        "max_num_seqs": rng.choice([2, 4, 8, 16] if pressure else [1, 2, 4, 8]),
        "max_num_batched_tokens": mnbt, "groups": groups,  # max_num_seqs <= mnbt below
        "kv_offloading_size_chunks": rng.choice([1, 2, 4, 8, 16, 32, 80, 200, 1000]),
        "eviction_policy": rng.choice(["lru", "arc"]),
        "load_steps": rng.choice([1, 1, 2, 3, 5]),
        "store_steps": rng.choice([1, 1, 2, 4, 6]),
        "kv_events": rng.choice([True, False]),
    }
    cfg["max_num_seqs"] = min(cfg["max_num_seqs"], mnbt)
    if not chunked:
        cfg["enable_chunked_prefill"] = False
    if bpc > 1:
        cfg["offload_block_size"] = bpc * bs
    if rng.random() < 0.3:
        cfg["store_threshold"] = rng.choice([1, 2, 3])
    if rng.random() < 0.35:
        cfg["offload_prompt_only"] = False
    if rng.random() < 0.35:
        cfg["sync_load_budget_bytes"] = rng.choice([1, 2, 8, 32, 128]) * bs * CHUNK_BYTES_1BLK
    if is_async:
        cfg["async_scheduling"] = True
    if rng.random() < 0.4:
        cfg["policy"] = rng.choice(["fcfs", "priority"])
        cfg["watermark"] = rng.choice([0.0, 0.01, 0.05])
        if rng.random() < 0.4:
            cfg["long_prefill_token_threshold"] = rng.choice([1, 2, 3, 4]) * bs
    if rng.random() < 0.15:
        cfg["max_num_active_seqs"] = min(rng.choice([1, 2]), cfg["max_num_seqs"])
    reqs = requests(rng, seed, bs * bpc, mml, cfg.get("policy") == "priority",
                    rng.choice([24, 64, 160]))
    return cfg, reqs


def requests(rng: random.Random, seed: int, c: int, mml: int, prio: bool,
             max_out: int) -> list[dict]:
    hi = max(c + 1, min(12 * c, mml - 4))
    docs = [[rng.randrange(1, 30000) for _ in range(rng.randrange(min(c, hi - 1), hi))]
            for _ in range(rng.randrange(1, 6))]
    reqs, step = [], 0
    for i in range(rng.randrange(6, 28)):
        r = rng.random()
        if r < 0.4:
            p = list(rng.choice(docs))
        elif r < 0.8:
            p = list(rng.choice(docs)) + [rng.randrange(1, 30000)
                                          for _ in range(rng.randrange(1, 3 * c + 2))]
        else:
            p = [rng.randrange(1, 30000) for _ in range(rng.randrange(1, 6 * c + 2))]
        p = p[: max(1, mml - 2)]
        out = rng.randrange(1, max(2, min(max_out, mml - len(p))))
        step += rng.choice([0, 0, 0, 1, 3, 8, 20])
        d = {"id": f"w{seed}r{i}", "prompt_token_ids": p, "output_length": out,
             "arrival_step": step}
        if prio:
            d["priority"] = rng.randrange(0, 3)
        reqs.append(d)
    return reqs
