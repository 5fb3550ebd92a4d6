# ruff: noqa
"""Dev tool (not a test): scheduler traces over the KV cache groups vLLM 0.33 planned for the
tiny configs of ../refused_lifted (its answers.json: the groups of the real classes, built on
the meta device), for this folder's oracle_lifted.py.

    python3 tests/data/sched_lifted/make_lifted.py OUT_DIR FIRST LAST     # seeds FIRST..LAST-1

Seed N writes, for each model below, `MODEL_N.trace.jsonl` (sync) and `MODEL_Na.trace.jsonl`
(async: the same requests and knobs, `async_scheduling` true). The groups are answers.json's
`planning` groups in vLLM's order: `mla_attention` as `{"type": "mla"}` (an MLAAttentionSpec,
whose events say so), `sliding_window` with the window of its layers' spec, `full_attention`,
`sink_full_attention` as `{"type": "sink_full", "sink_len": ...}` (the config's
`param_sink_number`), each at the block vLLM gave it. The rest as ../sched_mimo/make_mimo.py:
prefix caching on 3 in 5, max_model_len 256 or 384, a pool from what one max_model_len request
needs in every group (ceil(mml / block) each) to 40 blocks more, the knobs and 3-9 requests of
../sched_spec_mamba/make_spec_mamba.py.
"""

import importlib.util
import json
import math
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIFTED = HERE.parent / "refused_lifted"
_spec = importlib.util.spec_from_file_location(
    "make_spec_mamba", HERE.parent / "sched_spec_mamba" / "make_spec_mamba.py")
make_spec_mamba = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_spec_mamba)

MODELS = {"sarvam": "tiny-sarvam-mla", "longcat": "tiny-longcat-ngram", "rnj1": "tiny-rnj1",
          "domyn": "tiny-domyn-edge", "pangu": "tiny-pangu-v2-sink"}


def vllm_groups(case: str) -> list[dict]:
    """answers.json's groups of `case` as a config line's `groups`."""
    ans = json.loads((LIFTED / "answers.json").read_text())["cases"][case]
    specs = {s["name"]: s for s in ans["specs"]}
    hf = json.loads((LIFTED / f"{case}.config.json").read_text())
    out = []
    for g in ans["planning"][0]["groups"]:
        kind = g["kind"]
        if kind == "mla_attention":
            d = {"type": "mla"}
        elif kind == "sliding_window":
            d = {"type": "sliding_window",
                 "sliding_window": specs[g["layers"][0]]["sliding_window"]}
        elif kind == "full_attention":
            d = {"type": "full"}
        elif kind == "sink_full_attention":
            d = {"type": "sink_full", "sink_len": hf["param_sink_number"]}
        else:
            raise SystemExit(f"{case}: group kind {kind}")
        out.append({**d, "block_size": g["block_size"]})
    return out


def traces(seed: int) -> list[tuple[str, list[str]]]:
    out = []
    for short, case in MODELS.items():
        rng = random.Random(f"{short}{seed}")
        caching = rng.random() < 0.6
        mml = rng.choice([256, 384])
        groups = vllm_groups(case)
        lcm = math.lcm(*(g["block_size"] for g in groups))
        gcd = math.gcd(*(g["block_size"] for g in groups))
        need = sum(-(-mml // g["block_size"]) for g in groups)
        small = rng.random() < 0.5
        pool = need + 1 + (rng.choice([0, 1, 3]) if small else rng.choice([10, 20, 40]))
        cfg = make_spec_mamba.base_config(rng, gcd, pool, mml, groups, caching)
        reqs = make_spec_mamba.requests(rng, lcm, mml, 0.35)
        for suffix, asyn in (("", False), ("a", True)):
            line = json.dumps({"config": {**cfg, "async_scheduling": asyn}})
            out.append((f"{short}_{seed}{suffix}", [line, *reqs]))
    return out


if __name__ == "__main__":
    for seed in range(int(sys.argv[2]), int(sys.argv[3])):
        for name, lines in traces(seed):
            Path(sys.argv[1], f"{name}.trace.jsonl").write_text("\n".join(lines) + "\n")
