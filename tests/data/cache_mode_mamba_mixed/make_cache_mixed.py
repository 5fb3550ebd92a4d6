# ruff: noqa
"""Dev tool (not a test): ../sched_mamba_mixed/make_mamba_mixed.py's traces made for cache mode
(oracle_cache_mixed.py, this folder): the pool cut to what vLLM's start-up check needs plus
0-8 blocks (so one request at a time still evicts), and 4 requests more, each an earlier
prompt (whole, or cut at a random length, then a new tail) arriving after it.

    python3 tests/data/cache_mode_mamba_mixed/make_cache_mixed.py OUT_DIR FIRST LAST   # cmN
    python3 tests/data/cache_mode_mamba_mixed/make_cache_mixed.py OUT_DIR FIRST LAST --pmu   # cpuN

(`--pmu`: from ../sched_mamba_mixed_pmu/make_mixed_pmu.py's traces, with a `prefix_match_unit`.)
"""

import importlib.util
import json
import math
import random
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "make_mamba_mixed", Path(__file__).resolve().parent.parent / "sched_mamba_mixed" / "make_mamba_mixed.py")
make_mamba_mixed = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_mamba_mixed)
_spec = importlib.util.spec_from_file_location(
    "make_mixed_pmu", Path(__file__).resolve().parent.parent / "sched_mamba_mixed_pmu" / "make_mixed_pmu.py")
make_mixed_pmu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_mixed_pmu)


def trace(seed: int, pmu: bool = False) -> tuple[str, list[str]]:
    _, lines = (make_mixed_pmu if pmu else make_mamba_mixed).trace(seed)
    rng = random.Random(seed * 7919 + 5)
    first = json.loads(lines[0])
    cfg = first["config"]
    bs, mml = cfg["block_size"], cfg["max_model_len"]
    need = 0
    for g in cfg["groups"]:
        size = g.get("block_size", bs)
        if g["type"] == "mamba":
            need += 3 if g.get("checkpoint") else 2
        elif g["type"] == "sliding_window":
            need += -(-min(g["sliding_window"] - 1 + cfg["max_num_batched_tokens"], mml) // size) + 1
        else:
            need += -(-mml // size)
    cfg["num_blocks"] = need + 1 + rng.choice([0, 1, 3, 8])
    reqs = [json.loads(x) for x in lines[1:]]
    last = max(r.get("arrival_step", 0) for r in reqs)
    for k in range(4):
        base = rng.choice(reqs)["prompt_token_ids"]
        cut = len(base) if rng.random() < 0.4 else rng.randrange(1, len(base) + 1)
        tail = [rng.randrange(3, 30000) for _ in range(rng.choice([0, 1, 7, 20, 45]))]
        prompt = (base[:cut] + tail)[: mml - 1] or [5]
        reqs.append({"id": f"x{k}", "prompt_token_ids": prompt, "output_length": 4,
                     "arrival_step": last + 1 + k})
    return ("cpu" if pmu else "cm") + str(seed), [json.dumps(first)] + [json.dumps(r) for r in reqs]


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for seed in range(int(sys.argv[2]), int(sys.argv[3])):
        name, lines = trace(seed, "--pmu" in sys.argv)
        (out / f"{name}.trace.jsonl").write_text("\n".join(lines) + "\n")
