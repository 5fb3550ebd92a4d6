"""Dev tool (not a test): random traces for the CPU offload oracle.

    python3 tests/data/offload_fresh/make_traces.py [--async] [--long] [--knobs] OUT_DIR SEED...
    oracle sched_offload [--async] --batch $(for f in OUT_DIR/*.trace.jsonl; do echo $f=${f%.trace.jsonl}.expected.jsonl; done)

(`oracle`: the vLLM oracle's command, a development tool the tests never run; tests/data/README.md
says where it lives.)

Each trace is a small GPU pool (so the GPU prefix cache loses documents) and a CPU tier of a
few to many chunks, with documents that come back (full repeats, extensions, shared heads), so
that CPU hits, loads, deferred lookups, evictions, failed offers, flushes and preemptions
happen. The config line draws the tier's knobs: chunk size (1, 2 or 4 blocks), LRU or ARC,
load and store steps, a store threshold, prompt-only off, a sync-load budget, KV events.
Cases are named oseedN (oaseedN with --async, which sets "async_scheduling": true). With
--long (cases olseedN, oalseedN) outputs run to 200 tokens, so that decoding requests spend
whole decode windows (`kvcore/engine/decode_windows.py`) in the running list while others are
admitted, preempted (async: held by vLLM's deferred frees) and stored.
With --knobs (cases named kos..., from a generator of their own, so every other draw of a seed
is unchanged) the scheduler options no other CPU-tier case draws: the priority policy (requests
get priorities), a watermark, scheduler_reserve_full_isl off, max_num_active_seqs, the adaptive
long-prefill threshold, prefix caching off, and sha256_cbor.
"""

import json
import random
import sys


def make(seed: int, long: bool = False) -> tuple[dict, list[dict]]:
    rng = random.Random(seed)
    max_out = 200 if long else 40
    bs = rng.choice([4, 8, 16])
    num_blocks = rng.choice([16, 24, 32, 48])
    cfg = {
        "block_size": bs,
        "num_blocks": num_blocks,
        "max_model_len": (num_blocks - 1) * bs,
        "max_num_seqs": rng.choice([2, 4, 8]),
        "max_num_batched_tokens": rng.choice([32, 64, 128, 256]),
        "enable_chunked_prefill": True,
        "kv_offloading_size_chunks": rng.choice([3, 6, 12, 24, 64]),
        "eviction_policy": rng.choice(["lru", "arc"]),
        "load_steps": rng.choice([1, 1, 2, 3]),
        "store_steps": rng.choice([1, 1, 2, 4]),
        "kv_events": rng.choice([True, False]),
    }
    bpc = rng.choice([1, 1, 2, 4])
    if bpc > 1:
        cfg["offload_block_size"] = bpc * bs
    if rng.random() < 0.2:
        cfg["store_threshold"] = 2
    if rng.random() < 0.2:
        cfg["offload_prompt_only"] = False
    if rng.random() < 0.2:
        cfg["sync_load_budget_bytes"] = rng.choice([1 << 20, 1 << 24, 1 << 30])
    if rng.random() < 0.2:
        cfg["long_prefill_token_threshold"] = rng.choice([2, 4]) * bs
    mml = cfg["max_model_len"]
    docs = [[rng.randrange(1, 30000) for _ in range(rng.randrange(bs, min(12 * bs, mml // 2)))]
            for _ in range(rng.randrange(2, 6))]
    reqs = []
    step = 0
    for i in range(rng.randrange(8, 20)):
        r = rng.random()
        if r < 0.5:
            p = list(rng.choice(docs))                                   # a repeat
        elif r < 0.8:
            p = list(rng.choice(docs)) + [rng.randrange(1, 30000)
                                          for _ in range(rng.randrange(1, 3 * bs))]
        else:
            p = [rng.randrange(1, 30000) for _ in range(rng.randrange(bs, 10 * bs))]
        p = p[: mml - 40]
        out = rng.randrange(1, min(max_out, mml - len(p)))
        step += rng.choice([0, 0, 1, 3, 8])
        reqs.append({"id": f"o{seed}r{i}", "prompt_token_ids": p, "output_length": out,
                     "arrival_step": step})
    return cfg, reqs


def add_knobs(cfg: dict, reqs: list[dict], seed: int) -> None:
    """Scheduler options the other CPU-tier cases leave at vLLM's defaults."""
    rng = random.Random(seed * 104723 + 11)
    if rng.random() < 0.5:
        cfg["policy"] = "priority"
        for r in reqs:
            r["priority"] = rng.randrange(0, 3)
    cfg["watermark"] = rng.choice([0.0, 0.0, 0.05, 0.1])
    cfg["scheduler_reserve_full_isl"] = rng.choice([True, False])
    if rng.random() < 0.5:
        cfg["max_num_active_seqs"] = rng.randrange(1, cfg["max_num_seqs"] + 1)
    if rng.random() < 0.4:
        cfg["long_prefill_token_threshold_adaptive"] = True
        cfg.setdefault("long_prefill_token_threshold", rng.choice([2, 3, 4]) * cfg["block_size"])
    cfg["enable_prefix_caching"] = rng.choice([False, True, True, True])
    cfg["hash_algo"] = rng.choice(["sha256", "sha256_cbor"])


if __name__ == "__main__":
    args = sys.argv[1:]
    asyn = "--async" in args
    long = "--long" in args
    knobs = "--knobs" in args
    args = [a for a in args if a not in ("--async", "--long", "--knobs")]
    out, seeds = args[0], args[1:]
    for s in seeds:
        cfg, reqs = make(int(s), long)
        if knobs:
            add_knobs(cfg, reqs, int(s))
        if asyn:
            cfg["async_scheduling"] = True
        name = (("k" if knobs else "") + "o" + ("a" if asyn else "") + ("l" if long else "")
                + "seed" + s)
        with open(f"{out}/{name}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)
