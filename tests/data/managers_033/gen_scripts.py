# ruff: noqa
"""Write random op scripts (the oracle harness's format) for the managers vLLM 0.33 added.

  python tests/data/managers_033/gen_scripts.py tests/data/managers_033

Each case: a config line (its groups, block size, a pool sometimes too small to admit every
request), then new / prefill / decode / free ops over requests whose prompts share prefixes
(so full-attention-like groups hit). Decodes only follow a finished prefill. Seeds are fixed:
rerunning writes the same files.
"""
import json
import random
import sys
from pathlib import Path

# name -> groups (each case picks one by its index)
LAYOUTS = {
    "cb": [[{"type": "circular_buffer"}],
           [{"type": "full"}, {"type": "circular_buffer"}],
           [{"type": "circular_buffer"}, {"type": "full"}],
           [{"type": "full"}, {"type": "circular_buffer"},
            {"type": "sliding_window", "sliding_window": 6}],
           [{"type": "full"}, {"type": "chunked_local", "attention_chunk_size": 8},
            {"type": "circular_buffer"}]],
    "rswa": [[{"type": "rswa", "rswa_window": 5}],
             [{"type": "rswa", "rswa_window": 9}],
             [{"type": "full"}, {"type": "rswa", "rswa_window": 7}],
             [{"type": "rswa", "rswa_window": 4}, {"type": "sliding_window", "sliding_window": 6}],
             [{"type": "full"}, {"type": "rswa", "rswa_window": 12}, {"type": "circular_buffer"}]],
    "sink": [[{"type": "sink_full", "sink_len": 8}],
             [{"type": "full"}, {"type": "sink_full", "sink_len": 4}]],
}
COUNTS = {"cb": 30, "rswa": 30, "sink": 2}


def gen_case(rng, groups):
    bs = 4
    num_blocks = rng.choice([24, 40, 64, 200])
    cfg = {"config": {"groups": groups, "block_size": bs, "num_blocks": num_blocks,
                      "hash": "sha256_cbor", "max_model_len": 4096,
                      "full_sequence_must_fit": rng.random() < 0.8, "kv_events": True}}
    prefixes = [[rng.randrange(50) for _ in range(rng.randrange(4, 20))] for _ in range(3)]
    ops = []
    live = {}       # id -> "prefill" | "decode"
    n = 0
    for _ in range(rng.randrange(25, 60)):
        r = rng.random()
        if r < 0.25 or not live:
            rid = f"r{n}"
            n += 1
            prompt = rng.choice(prefixes)[:] if rng.random() < 0.7 else []
            prompt += [rng.randrange(50) for _ in range(rng.randrange(1, 14))]
            op = {"op": "new", "id": rid, "prompt": prompt}
            if rng.random() < 0.3:
                op["num_tokens"] = rng.randrange(1, len(prompt) + 1)
            ops.append(op)
            live[rid] = "prefill" if "num_tokens" in op else "decode"
        elif r < 0.35:
            rid = rng.choice(sorted(live))
            op = {"op": "prefill", "id": rid}
            if rng.random() < 0.5:
                op["num_tokens"] = rng.randrange(1, 9)
            else:
                live[rid] = "decode"
            ops.append(op)
            if "num_tokens" in op:
                live[rid] = "prefill?"
        elif r < 0.85:
            ready = sorted(k for k, v in live.items() if v == "decode")
            if not ready:
                continue
            rid = rng.choice(ready)
            for _ in range(rng.randrange(1, 12)):
                ops.append({"op": "decode", "id": rid, "token": rng.randrange(50)})
        else:
            rid = rng.choice(sorted(live))
            ops.append({"op": "free", "id": rid})
            del live[rid]
    for rid in sorted(live):
        ops.append({"op": "free", "id": rid})
    return cfg, ops


def main(out_dir):
    out = Path(out_dir)
    for name, layouts in LAYOUTS.items():
        for k in range(COUNTS[name]):
            rng = random.Random(f"{name}-{k}")
            cfg, ops = gen_case(rng, layouts[k % len(layouts)])
            with open(out / f"{name}-{k:02d}.ops.jsonl", "w") as f:
                f.write(json.dumps(cfg) + "\n")
                for op in ops:
                    f.write(json.dumps(op) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
