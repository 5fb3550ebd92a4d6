# ruff: noqa
"""Dev tool (not a test): random scheduler traces with the KV cache groups vLLM 0.33 plans for a
Mamba hybrid on pipeline stages some of which hold no attention layer, for oracle_pp_stages.py
(this folder).

    python3 tests/data/sched_pp_mamba_stages/make_cases.py OUT_DIR FIRST LAST  # seeds FIRST..LAST-1

Seed N writes `psN.trace.jsonl`. A stage without attention keeps its Mamba layers at the
configured block B (the config line's: the engine core's smallest block, its
`cache_config.block_size`), a stage with attention raises its layers' block to A = kB
(../../../kvcore/sizing/stage_specs.py), so the groups, one layer each as vLLM makes them there,
are buckets in the order of their first layer: Mamba at B, Mamba at A, attention at A, in an
order drawn from the recorded plans (Kimi Linear on 4 stages: 3 Mamba B, 1 Mamba A, 2 full A;
Jamba on 2: 4 Mamba B, 1 full A, 3 Mamba A; a first stage with attention: full A, Mamba A,
Mamba B). Each draws, from `random.Random(N)`: B (8 or 16), k (2, 4 or 8), the layout, Mamba1
or Mamba2 with a prefill checkpoint (1 in 2), PP 2-4, sync or async, max_model_len 256 or 384,
a pool from what one max_model_len request needs to 60 blocks more, and
../sched_spec_mamba/make_spec_mamba.py's scheduler knobs and requests; prefix caching on (the
groups differ only in "align" mode).
"""

import importlib.util
import json
import random
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "make_spec_mamba",
    Path(__file__).resolve().parent.parent / "sched_spec_mamba" / "make_spec_mamba.py")
make_spec_mamba = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_spec_mamba)

# (bare Mamba groups, aligned Mamba groups, attention groups) in the order of their first layer
LAYOUTS = [(("mb", 3), ("ma", 1), ("fa", 2)), (("mb", 4), ("fa", 1), ("ma", 3)),
           (("fa", 1), ("ma", 2), ("mb", 2)), (("mb", 1), ("ma", 1), ("fa", 1)),
           (("mb", 2), ("fa", 1), ("ma", 1))]


def trace(seed: int) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    bs = rng.choice([8, 16])
    big = bs * rng.choice([2, 4, 8])
    ckpt = rng.random() < 0.5
    layout = rng.choice(LAYOUTS)
    groups = []
    for kind, n in layout:
        for _ in range(n):
            if kind == "fa":
                groups.append({"type": "full", "block_size": big})
                continue
            g = {"type": "mamba", "checkpoint": True} if ckpt else {"type": "mamba"}
            groups.append(g if kind == "mb" else {**g, "block_size": big})
    mml = rng.choice([256, 384])
    nm = sum(g["type"] == "mamba" for g in groups)
    need = nm * (3 if ckpt else 2) + sum(-(-mml // big) for g in groups if g["type"] == "full")
    cfg = make_spec_mamba.base_config(rng, bs, need + 1 + rng.choice([0, 2, 5, 10, 20, 60]),
                                      mml, groups, True)
    cfg["pipeline_parallel_size"] = rng.choice([2, 3, 4])
    cfg["async_scheduling"] = rng.random() < 0.5
    lines = [json.dumps({"config": cfg}), *make_spec_mamba.requests(rng, bs, mml, 0.35)]
    return "ps" + str(seed), lines


if __name__ == "__main__":
    make_spec_mamba.write_traces(trace, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
