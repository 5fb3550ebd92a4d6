"""Dev tool (not a test): CPU-tier traces sized in GiB over real and odd KV geometries.

    python3 tests/data/offload_sizing/make_cases.py OUT_DIR SEED...
    oracle sched_offload --no-queues --batch $(for f in OUT_DIR/*.trace.jsonl; do
        echo $f=${f%.trace.jsonl}.expected.jsonl; done)

(`oracle`: the vLLM oracle's command, a development tool the tests never run; tests/data/README.md
says where it lives.) Every earlier CPU-tier campaign sized the tier in chunks
(`kv_offloading_size_chunks`) over Llama-3-8B's geometry. Here each case (`gsNNN`, seeded by NNN)
gives `kv_offloading_size` in GiB, as `vllm serve --kv-offloading-size` does, over a KV geometry
(`num_layers`, `num_kv_heads`, `head_size`, `kv_dtype`: a real model's, one rank's share of a
TP-split one, or odd numbers; float16, bfloat16, float32 and float8_e4m3fn), a GPU block size
(odd ones too) and an offload block size of 1 to 8 blocks. The GiB value is drawn so that the
tier holds a few to a few dozen chunks, written the ways a user writes it: an exact multiple of a
chunk, a decimal rounded to 3 or 6 digits, one byte short of a chunk boundary (vLLM floors it), a
whole number of GiB (over a geometry with large chunks). Half the cases are async; half draw the
scheduler knobs (`offload_fresh/make_traces.py --knobs`' list); the tier's knobs as there.
With --long (cases `glN`): pools of 64-256 blocks, 20-40 requests, outputs up to 200 tokens, and
chunked prefill off in 3 cases of 10 (the step budget then holds max_model_len).
"""

import json
import random
import sys

GIB = 1 << 30
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float8_e4m3fn": 1}
# (layers, KV heads, head size) of real models, some at one rank of a TP split
REAL = [
    (32, 8, 128),    # Llama-3-8B, Mistral-7B
    (80, 2, 128),    # Llama-3-70B at TP 4
    (28, 4, 128),    # Qwen2.5-7B
    (32, 32, 96),    # Phi-3-mini
    (32, 32, 80),    # Phi-2
    (18, 1, 256),    # Gemma-2B (multi-query)
    (32, 1, 64),     # Falcon-7B (multi-query)
    (16, 8, 64),     # Llama-3.2-1B
    (24, 2, 64),     # Qwen2-0.5B
    (40, 8, 128),    # Qwen2.5-14B
    (64, 1, 128),    # Qwen2.5-32B at TP 8
    (61, 1, 576),    # DeepSeek-V3's latent, as a full-attention page (factor 2)
    (36, 8, 128),    # Qwen3-8B
    (26, 4, 256),    # Gemma-2-2B (its layers all full here)
    (62, 16, 128),   # Gemma-3-27B
    (48, 4, 112),    # an odd head size
]


def geometry(rng: random.Random) -> dict:
    if rng.random() < 0.6:
        layers, heads, head = rng.choice(REAL)
    else:
        layers = rng.choice([1, 2, 3, 5, 7, 13, 22, 31, 47, 95])
        heads = rng.choice([1, 2, 3, 5, 6, 12, 40])
        head = rng.choice([8, 24, 40, 72, 100, 120, 160, 192, 200, 320])
    dtype = rng.choice(["bfloat16", "float16", "float32", "float8_e4m3fn", "float8_e4m3fn"])
    return {"num_layers": layers, "num_kv_heads": heads, "head_size": head, "kv_dtype": dtype}


def gib_for(rng: random.Random, chunk: int) -> tuple[float, str]:
    """A size in GiB giving a few to a few dozen chunks of ``chunk`` bytes, and how drawn."""
    n = rng.choice([1, 2, 3, 4, 5, 7, 9, 12, 17, 24, 33, 48])
    how = rng.choice(["exact", "dec3", "dec6", "below", "frac", "whole"])
    if how == "exact":
        return n * chunk / GIB, how
    if how == "below":
        return (n * chunk - 1) / GIB, how
    if how == "whole":
        return max(1, round(n * chunk / GIB)), how
    x = (n + rng.random()) * chunk / GIB
    if how == "frac":
        return x, how
    digits = 3 if how == "dec3" else 6
    return float(f"{x:.{digits}g}"), how


def chunk_bytes(geo: dict, bs: int, bpc: int) -> int:
    block = (2 * bs * geo["num_kv_heads"] * geo["head_size"] * DTYPE_BYTES[geo["kv_dtype"]]
             * geo["num_layers"])
    return -(-block * bpc // 4096) * 4096


def make(seed: int, long: bool = False) -> tuple[dict, list[dict], str]:
    rng = random.Random(seed * 7919 + 3)
    bs = rng.choice([1, 2, 3, 4, 5, 8, 12, 16, 16, 32, 48, 64])
    num_blocks = rng.choice([12, 16, 24, 32, 48, 64])
    if long:    # bigger pools, more requests, long outputs, chunked prefill off at times
        bs = rng.choice([2, 4, 8, 16, 16, 32])
        num_blocks = rng.choice([64, 96, 128, 256])
    bpc = rng.choice([1, 1, 2, 3, 4, 8])
    geo = geometry(rng)
    if rng.random() < 0.15:         # a whole GiB over big chunks: widen the geometry
        geo.update(num_layers=80, num_kv_heads=8, head_size=128, kv_dtype="float32")
    gib, how = gib_for(rng, chunk_bytes(geo, bs, bpc))
    mml = max((num_blocks - 1) * bs, 8)
    cfg = {
        "block_size": bs, "num_blocks": num_blocks, "max_model_len": mml,
        "max_num_seqs": rng.choice([2, 4, 8]),
        "max_num_batched_tokens": max(rng.choice([4, 8, 16]) * bs, 16),
        "kv_offloading_size": gib, **geo,
        "eviction_policy": rng.choice(["lru", "arc"]),
        "load_steps": rng.choice([1, 1, 2, 3]),
        "store_steps": rng.choice([1, 1, 2, 4]),
        "kv_events": rng.choice([True, False]),
    }
    if bpc > 1:
        cfg["offload_block_size"] = bpc * bs
    if rng.random() < 0.2:
        cfg["store_threshold"] = 2
    if rng.random() < 0.2:
        cfg["offload_prompt_only"] = False
    if rng.random() < 0.25:         # a budget of a few chunks' bytes: sync loads happen
        cfg["sync_load_budget_bytes"] = rng.choice([1, 2, 5]) * chunk_bytes(geo, bs, bpc)
    if rng.random() < 0.5:
        cfg["async_scheduling"] = True
    if long and rng.random() < 0.3:
        cfg["enable_chunked_prefill"] = False
        cfg["max_num_batched_tokens"] = max(cfg["max_num_batched_tokens"], mml)
    reqs = requests(rng, seed, bs, bpc, mml, long)
    if rng.random() < 0.5:
        knobs(rng, cfg, reqs)
    return cfg, reqs, how


def requests(rng: random.Random, seed: int, bs: int, bpc: int, mml: int,
             long: bool = False) -> list[dict]:
    c = bs * bpc
    docs = [[rng.randrange(1, 30000) for _ in range(rng.randrange(bs, max(bs + 1, min(6 * c,
                                                                             mml // 2))))]
            for _ in range(rng.randrange(2, 6))]
    reqs, step = [], 0
    for i in range(rng.randrange(20, 40) if long else rng.randrange(8, 18)):
        r = rng.random()
        if r < 0.5:
            p = list(rng.choice(docs))
        elif r < 0.8:
            p = list(rng.choice(docs)) + [rng.randrange(1, 30000)
                                          for _ in range(rng.randrange(1, 2 * c + 2))]
        else:
            p = [rng.randrange(1, 30000) for _ in range(rng.randrange(1, 5 * c + 2))]
        p = p[: max(1, mml - 20)]
        out = rng.randrange(1, max(2, min(200 if long else 30, mml - len(p))))
        step += rng.choice([0, 0, 1, 3, 8])
        reqs.append({"id": f"g{seed}r{i}", "prompt_token_ids": p, "output_length": out,
                     "arrival_step": step})
    return reqs


def knobs(rng: random.Random, cfg: dict, reqs: list[dict]) -> None:
    if rng.random() < 0.5:
        cfg["policy"] = "priority"
        for r in reqs:
            r["priority"] = rng.randrange(0, 3)
    cfg["watermark"] = rng.choice([0.0, 0.05, 0.1])
    cfg["scheduler_reserve_full_isl"] = rng.choice([True, False])
    if rng.random() < 0.4:
        cfg["max_num_active_seqs"] = rng.randrange(1, cfg["max_num_seqs"] + 1)
    if rng.random() < 0.4:
        cfg["long_prefill_token_threshold"] = rng.choice([2, 3, 4]) * cfg["block_size"]
        cfg["long_prefill_token_threshold_adaptive"] = rng.random() < 0.5
    cfg["enable_prefix_caching"] = rng.choice([False, True, True, True])
    cfg["hash_algo"] = rng.choice(["sha256", "sha256_cbor"])


if __name__ == "__main__":
    long = "--long" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--long"]
    out, seeds = args[0], args[1:]
    for s in seeds:
        cfg, reqs, how = make(int(s), long)
        with open(f"{out}/{'gl' if long else 'gs'}{s}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)
