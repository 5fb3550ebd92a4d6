# ruff: noqa
"""Write random op scripts (the oracle harness's format) for DeepSeek-V4's five KV cache
groups (tiny-dsv4's: swa 64-token blocks window 128 twice, the compressed caches' 256-token
blocks, the ratio-128 states' 8-token blocks window 128, the ratio-4 states' 4-token blocks
window 8), one pool, hash block 4, scheduler block 256.

  python tests/data/deepseek_v4/managers/gen_scripts.py tests/data/deepseek_v4/managers

The config line is kvcli's (`kvcli script OPS --model-config tiny-dsv4.config.json` puts the
model's groups in place of `groups`; record.py builds vLLM's same five). Prompts of up to
1,400 tokens share long prefixes (hits need 256-token runs); chunked prefills, decode runs
crossing the 4- and 8-token blocks, frees; pools from too small to roomy. Seeds fixed:
rerunning writes the same files.
"""
import json
import random
import sys
from pathlib import Path

COUNT = 12



def gen_case(rng):
    num_blocks = rng.choice([250, 500, 900, 2000, 4000])
    cfg = {"config": {"num_blocks": num_blocks, "hash": "sha256_cbor", "max_model_len": 4096,
                      "full_sequence_must_fit": rng.random() < 0.8, "kv_events": True}}
    vocab = rng.choice([50, 1000])
    prefixes = [[rng.randrange(vocab) for _ in range(rng.randrange(200, 900))]
                for _ in range(3)]
    ops = []
    live = {}       # id -> "prefill" | "decode"
    n = 0
    for _ in range(rng.randrange(25, 50)):
        r = rng.random()
        if r < 0.3 or not live:
            rid = f"r{n}"
            n += 1
            prompt = rng.choice(prefixes)[:] if rng.random() < 0.75 else []
            prompt += [rng.randrange(vocab) for _ in range(rng.randrange(1, 500))]
            op = {"op": "new", "id": rid, "prompt": prompt}
            if rng.random() < 0.35:
                op["num_tokens"] = rng.randrange(1, len(prompt) + 1)
            ops.append(op)
            live[rid] = "prefill" if "num_tokens" in op else "decode"
        elif r < 0.45:
            rid = rng.choice(sorted(live))
            op = {"op": "prefill", "id": rid}
            if rng.random() < 0.5:
                op["num_tokens"] = rng.randrange(1, 400)
                live[rid] = "prefill?"
            else:
                live[rid] = "decode"
            ops.append(op)
        elif r < 0.85:
            ready = sorted(k for k, v in live.items() if v == "decode")
            if not ready:
                continue
            rid = rng.choice(ready)
            for _ in range(rng.randrange(1, 40)):
                ops.append({"op": "decode", "id": rid, "token": rng.randrange(vocab)})
        else:
            rid = rng.choice(sorted(live))
            ops.append({"op": "free", "id": rid})
            del live[rid]
    for rid in sorted(live):
        ops.append({"op": "free", "id": rid})
    return cfg, ops


def main(out_dir):
    out = Path(out_dir)
    for k in range(COUNT):
        cfg, ops = gen_case(random.Random(f"dsv4-{k}"))
        with open(out / f"dsv4-{k:02d}.ops.jsonl", "w") as f:
            f.write(json.dumps(cfg) + "\n")
            for op in ops:
                f.write(json.dumps(op) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
