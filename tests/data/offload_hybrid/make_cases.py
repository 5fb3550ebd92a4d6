"""Dev tool (not a test): CPU-tier traces over hybrid KV cache groups (full + sliding window,
full + chunked local, two windows), for the oracle's `sched_offload` patched by
`patch_oracle_hybrid.py` (README.md here).

    python3 tests/data/offload_hybrid/make_cases.py OUT_DIR SEED...

Case `hyNNN` is seeded by NNN. Groups (`groups`, sched.py's key): [full, sliding], [sliding,
full], [full, sliding, sliding] with two windows, [full, chunked_local], [chunked_local, full];
windows and attention chunks of a few to a dozen blocks, some not block multiples. A tier of a
few to 80 chunks (`kv_offloading_size_chunks`), 1-4 blocks per chunk, LRU/ARC, store and load
latencies, KV events, sync-load budgets, store thresholds, prompt-only off, async half the time,
scheduler knobs a third of the time. `max_model_len` is lowered until one request fits the pool
(vLLM's startup check, which the patched oracle applies).

    python3 tests/data/offload_hybrid/make_cases.py --wide OUT_DIR SEED...

`--wide` draws from a wider space (wide.py; without it seeds redraw as before): block sizes
1-3 and 32, three groups, larger pools and tiers, longer outputs, chunked prefill off,
preemption pressure, sync-load budgets, store thresholds and prompt-only off more often.
"""

import json
import random
import sys

CHUNK_BYTES_1BLK = 2 * 8 * 128 * 2 * 32     # default geometry, one group, per token


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def draw_groups(rng: random.Random, bs: int) -> list[dict]:
    def win() -> int:
        w = rng.choice([2, 3, 4, 5, 8, 12]) * bs
        if rng.random() < 0.3:
            w += rng.choice([-1, 1, bs // 2 or 1])
        return max(1, w)
    kind = rng.choice(["fs", "fs", "sf", "fss", "fc", "cf"])
    s = {"type": "sliding_window", "sliding_window": win()}
    c = {"type": "chunked_local", "attention_chunk_size": rng.choice([2, 4, 6, 8]) * bs}
    f = {"type": "full"}
    return {"fs": [f, s], "sf": [s, f], "fc": [f, c], "cf": [c, f],
            "fss": [f, s, {"type": "sliding_window", "sliding_window": win()}]}[kind]


def needed_blocks(groups: list[dict], mml: int, bs: int, in_flight: int) -> int:
    n = 0
    for g in groups:
        if g["type"] == "full":
            n += cdiv(mml, bs)
        elif g["type"] == "sliding_window":
            n += cdiv(min(g["sliding_window"] - 1 + in_flight, mml), bs) + 1
        else:
            n += cdiv(min(g["attention_chunk_size"] + in_flight, mml), bs)
    return n


def make(seed: int) -> tuple[dict, list[dict]]:
    rng = random.Random(seed * 7919 + 11)
    bs = rng.choice([4, 8, 16, 16, 32])
    bpc = rng.choice([1, 1, 2, 4])
    groups = draw_groups(rng, bs)
    num_blocks = rng.choice([24, 32, 48, 64, 96])
    is_async = rng.random() < 0.5
    mnbt = rng.choice([4, 8, 16]) * bs
    mml = (num_blocks // len(groups)) * bs
    while mml > 2 * bs and needed_blocks(groups, mml, bs, mnbt * (2 if is_async else 1)) \
            > num_blocks - 1:
        mml -= bs
    cfg = {
        "block_size": bs, "num_blocks": num_blocks, "max_model_len": mml,
        "max_num_seqs": rng.choice([2, 4, 8]), "max_num_batched_tokens": mnbt,
        "groups": groups,
        "kv_offloading_size_chunks": rng.choice([2, 4, 8, 16, 32, 80]),
        "eviction_policy": rng.choice(["lru", "arc"]),
        "load_steps": rng.choice([1, 1, 2, 3]),
        "store_steps": rng.choice([1, 1, 2, 4]),
        "kv_events": rng.choice([True, False]),
    }
    if bpc > 1:
        cfg["offload_block_size"] = bpc * bs
    if rng.random() < 0.15:
        cfg["store_threshold"] = 2
    if rng.random() < 0.15:
        cfg["offload_prompt_only"] = False
    if rng.random() < 0.2:
        cfg["sync_load_budget_bytes"] = rng.choice([2, 8, 32]) * bs * CHUNK_BYTES_1BLK
    if is_async:
        cfg["async_scheduling"] = True
    if rng.random() < 0.33:
        cfg["policy"] = rng.choice(["fcfs", "priority"])
        cfg["watermark"] = rng.choice([0.0, 0.05])
        if rng.random() < 0.4:
            cfg["long_prefill_token_threshold"] = rng.choice([2, 3, 4]) * bs
    reqs = requests(rng, seed, bs * bpc, mml, cfg.get("policy") == "priority")
    return cfg, reqs


def requests(rng: random.Random, seed: int, c: int, mml: int, prio: bool) -> list[dict]:
    docs = [[rng.randrange(1, 30000) for _ in range(rng.randrange(c, max(c + 1, min(8 * c,
                                                                             mml - 8))))]
            for _ in range(rng.randrange(2, 5))]
    reqs, step = [], 0
    for i in range(rng.randrange(8, 20)):
        r = rng.random()
        if r < 0.45:
            p = list(rng.choice(docs))
        elif r < 0.8:
            p = list(rng.choice(docs)) + [rng.randrange(1, 30000)
                                          for _ in range(rng.randrange(1, 2 * c + 2))]
        else:
            p = [rng.randrange(1, 30000) for _ in range(rng.randrange(1, 5 * c + 2))]
        p = p[: max(1, mml - 10)]
        out = rng.randrange(1, max(2, min(24, mml - len(p))))
        step += rng.choice([0, 0, 1, 3, 8])
        d = {"id": f"h{seed}r{i}", "prompt_token_ids": p, "output_length": out,
             "arrival_step": step}
        if prio:
            d["priority"] = rng.randrange(0, 3)
        reqs.append(d)
    return reqs


if __name__ == "__main__":
    wide = sys.argv[1] == "--wide"
    out, seeds = sys.argv[1 + wide], sys.argv[2 + wide:]
    if wide:
        sys.path.insert(0, __file__.rsplit("/", 1)[0])
        from wide import make_wide
    for s in seeds:
        cfg, reqs = make_wide(int(s)) if wide else make(int(s))
        with open(f"{out}/hy{s}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)
