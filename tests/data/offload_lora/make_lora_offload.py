"""Dev tool (not a test): CPU-tier traces whose requests carry LoRA adapters and cache salts,
over one KV cache group or hybrid groups, for the oracle copy patched by `patch_oracle.py`.

    python3 tests/data/offload_lora/make_lora_offload.py [--twins] [--knobs] SPACE OUT_DIR SEED...

Each space starts from an existing generator's draw, unchanged (no generator was edited, so
every earlier draw of a seed is as it was), and lays adapters and salts over it from a
generator of its own:

  one   `offload_fresh/make_traces.make` (one full-attention group; `--long` outputs on seeds
        divisible by 3); odd seeds async. Cases `lo[a]seedN`.
  hy    `offload_hybrid/make_cases.make` (full + sliding / chunked-local layouts; it draws the
        mode itself). Cases `lhyN`.
  wide  `offload_hybrid/wide.make_wide` (block sizes 1-32, three groups, preemptions, chunked
        prefill off). Cases `lwN`.

The overlay: one to three adapters and up to two salts; each request gets an adapter (p 0.6)
and a salt (p 0.3); a request that repeats or extends an earlier one's prompt keeps that one's
domain half the time, so the same documents are cached under several domains at once (they
must not share GPU blocks or CPU chunks) and also hit in their own. The tier is shrunk (halved
or quartered, at least 2 chunks) two times in three, since the domains multiply the keys it
holds, and KV events are on three times in four (vLLM's CPU `BlockStored` carries no adapter
unless `self_describing_kv_events` is set, which neither vLLM's default nor kvcli sets).

With `--twins` (cases named `t` + the name) a third of the requests get a twin after the
overlay: the same prompt, arrival and output in another domain (`IDt`), so identical prompts of
two adapters are stored, evicted and looked up side by side in the same steps. With `--knobs`
(cases named `k` + the name) `offload_fresh`'s knob draw (`make_traces.add_knobs`: priorities,
watermark, full-sequence admission off, max_num_active_seqs, the adaptive threshold, prefix
caching off, sha256_cbor, whose CBOR hash encodes the adapter and salt otherwise) goes on before
the overlay.
"""

import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "offload_hybrid"))
sys.path.insert(0, str(HERE.parent / "offload_fresh"))
import make_cases as HY  # offload_hybrid's (its folder is ahead of this one on the path)
import make_traces as MT
from wide import make_wide

LORAS = ["sql", "chat", "code"]
SALTS = ["t1", "é"]


def overlay(cfg: dict, reqs: list[dict], seed: int) -> None:
    rng = random.Random(seed * 6151 + 29)
    loras = LORAS[:rng.randint(1, 3)]
    salts = SALTS[:rng.randint(0, 2)]
    for i, r in enumerate(reqs):
        r.pop("lora", None)
        r.pop("cache_salt", None)
        if rng.random() < 0.6:
            r["lora"] = rng.choice(loras)
        if salts and rng.random() < 0.3:
            r["cache_salt"] = rng.choice(salts)
        p = r["prompt_token_ids"]
        for q in reversed(reqs[:i]):
            s = q["prompt_token_ids"]
            if p[:len(s)] == s:
                if rng.random() < 0.5:
                    for k in ("lora", "cache_salt"):
                        r.pop(k, None)
                        if k in q:
                            r[k] = q[k]
                break
    if rng.random() < 2 / 3:
        cfg["kv_offloading_size_chunks"] = max(2, cfg["kv_offloading_size_chunks"]
                                               // rng.choice([2, 4]))
    cfg["kv_events"] = rng.random() < 0.75


def twins(reqs: list[dict], seed: int) -> list[dict]:
    rng = random.Random(seed * 7127 + 3)
    out = []
    for r in reqs:
        out.append(r)
        if rng.random() < 1 / 3:
            t = {k: v for k, v in r.items() if k not in ("lora", "cache_salt")}
            t["id"] = r["id"] + "t"
            dom = (r.get("lora"), r.get("cache_salt"))
            while (t.get("lora"), t.get("cache_salt")) == dom:
                t.pop("cache_salt", None)
                t["lora"] = rng.choice(LORAS + [None])
                if t["lora"] is None:
                    del t["lora"]
                    t["cache_salt"] = rng.choice(SALTS)
            out.append(t)
    return out


def draw(space: str, seed: int, knobs: bool = False) -> tuple[str, dict, list[dict]]:
    if space == "one":
        cfg, reqs = MT.make(seed, long=seed % 3 == 0)
        if seed % 2:
            cfg["async_scheduling"] = True
        name = f"lo{'a' if seed % 2 else ''}seed{seed}"
    elif space == "hy":
        cfg, reqs = HY.make(seed)
        name = f"lhy{seed}"
    else:
        cfg, reqs = make_wide(seed)
        name = f"lw{seed}"
    if knobs:
        MT.add_knobs(cfg, reqs, seed)
        name = "k" + name
    overlay(cfg, reqs, seed)
    return name, cfg, reqs


if __name__ == "__main__":
    args = sys.argv[1:]
    twin, knobs = "--twins" in args, "--knobs" in args
    args = [a for a in args if a not in ("--twins", "--knobs")]
    space, out, seeds = args[0], args[1], args[2:]
    assert space in ("one", "hy", "wide"), space
    Path(out).mkdir(parents=True, exist_ok=True)
    for s in seeds:
        name, cfg, reqs = draw(space, int(s), knobs)
        if twin:
            name, reqs = "t" + name, twins(reqs, int(s))
        with open(f"{out}/{name}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)
