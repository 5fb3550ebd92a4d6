"""Dev tool: write multi-group op scripts for the oracle (not a test).

2-4 KV cache groups (two full groups; full + two windows; sliding/full/sliding/sliding
interleaved), random prompts over a few shared prefixes, chunked admissions, prefill steps,
decodes and frees under eviction pressure. kvcore drives the generation so that every op is
valid (no decode before the prompt is computed); the expected answers then come from the real
vLLM: ``shared/oracle/tool/oracle harness trace OPS > EXPECTED``.

    .venv/bin/python tests/data/oracle_fresh/gen_multi_group.py FIRST_SEED LAST_SEED OUT_DIR
"""

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from kvcore.engine.op_script import parse_config
from kvcore.engine.script_runner import ScriptRunner

SWA = "sliding_window"
GROUPSETS = [
    [{"type": "full"}, {"type": SWA, SWA: 8}, {"type": SWA, SWA: 20}],
    [{"type": SWA, SWA: 6}, {"type": SWA, SWA: 13}],
    [{"type": "full"}, {"type": "full"}],
    [{"type": SWA, SWA: 12}, {"type": "full"}, {"type": SWA, SWA: 12}, {"type": SWA, SWA: 5}],
    [{"type": "full"}, {"type": SWA, SWA: 4}, {"type": "full"}],
]


def generate(seed: int) -> list[dict]:
    rng = random.Random(seed)
    groups = GROUPSETS[seed % len(GROUPSETS)]
    cfg = {"groups": groups, "block_size": rng.choice([2, 4, 8]),
           "num_blocks": rng.randint(12, 60) * len(groups) // 2 + 1,
           "hash": rng.choice(["sha256", "xxhash", "sha256_cbor", "xxhash_cbor"]),
           "max_model_len": 512, "full_sequence_must_fit": rng.random() < 0.7,
           "kv_events": rng.random() < 0.6}
    runner = ScriptRunner(parse_config(cfg, "<gen>", 1))
    prefixes = [[rng.randrange(50) for _ in range(rng.randint(4, 40))] for _ in range(4)]
    ops: list[dict] = [{"config": cfg}]

    def do(op: dict) -> None:
        ops.append(op)
        runner.apply(op)

    for i in range(150):
        live = runner.reqs
        r = rng.random()
        if r < 0.35 or not live:
            prompt = rng.choice(prefixes)[: rng.randint(1, 40)] + [
                rng.randrange(50) for _ in range(rng.randint(0, 20))]
            op = {"op": "new", "id": f"q{i}", "prompt": prompt or [1]}
            if rng.random() < 0.4:
                op["num_tokens"] = rng.randint(1, max(1, len(prompt)))
            do(op)
        elif r < 0.55:
            op = {"op": "prefill", "id": rng.choice(sorted(live))}
            if rng.random() < 0.5:
                op["num_tokens"] = rng.randint(1, 12)
            do(op)
        elif r < 0.8:
            rid = rng.choice(sorted(live))
            if live[rid].num_computed_tokens < live[rid].num_tokens:
                do({"op": "prefill", "id": rid})
            for _ in range(rng.randint(1, 6)):
                req = live.get(rid)
                if req is not None and req.num_computed_tokens == req.num_tokens:
                    do({"op": "decode", "id": rid, "token": rng.randrange(50)})
        else:
            do({"op": "free", "id": rng.choice(sorted(live))})
        if rng.random() < 0.05 and live:
            do({"op": "hashes", "id": rng.choice(sorted(live))})
    ops.append({"op": "summary"})
    return ops


def main() -> None:
    first, last, out = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    out.mkdir(parents=True, exist_ok=True)
    for seed in range(first, last + 1):
        lines = [json.dumps(op) for op in generate(seed)]
        (out / f"multi-{seed}.ops.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
