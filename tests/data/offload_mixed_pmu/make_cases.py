# ruff: noqa
"""Dev tool (not a test): CPU-tier traces over Mamba groups beside sliding-window groups (and
full attention) of several block sizes with a `prefix_match_unit`, for the oracle's
`sched_offload` patched as ../offload_mixed_spec/README.md says (README.md here).

    python3 tests/data/offload_mixed_pmu/make_cases.py [--retention | --decode | --window | --no-mamba] OUT_DIR SEED...

Case `oxuNNN` (`oxurNNN`, `oxudNNN` with the flag) is ../offload_mixed/make_cases.py's case NNN
with the same flag (its layout, pool, tier, requests and retention, imported), kept only when
its groups hold a Mamba group and a sliding window, with `prefix_match_unit` drawn from
`random.Random(NNN * 7919 + 13)`: the groups' gcd, or a half or a quarter of it (at least 2).
With `--window` (case `oxuwNNN`, the plain case's layout) the unit is drawn below the Mamba
block B (B/2 or B/4, at least 2) and every sliding window's block made the unit, so that vLLM's
partial hash hits stay on beside them; the pool gains each window's max_model_len in those
blocks. With `--no-mamba` (case `oxunNNN`) the plain case's layouts WITHOUT a Mamba group (full
attention and sliding windows), the unit drawn as above (the oracle patched by
`patch_oracle_mixed_pmu.py` too).
"""

import importlib.util
import json
import math
import random
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "ox_cases", Path(__file__).resolve().parent.parent / "offload_mixed" / "make_cases.py")
ox = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ox)


def make(seed: int, flag: str):
    cfg, reqs = ox.make(seed, flag == "--retention", flag == "--decode")
    if flag == "--window":
        return window(seed, cfg, reqs)
    types = {g["type"] for g in cfg["groups"]}
    if flag == "--no-mamba":
        if "mamba" in types:
            return "", cfg, reqs
        flag = "--n"
    elif "mamba" not in types or "sliding_window" not in types:
        return "", cfg, reqs
    rng = random.Random(seed * 7919 + 13)
    gcd = math.gcd(*(g.get("block_size", cfg["block_size"]) for g in cfg["groups"]))
    cfg["prefix_match_unit"] = max(2, gcd // rng.choice([1, 2, 4]))
    return f"oxu{flag[2:3]}{seed}", cfg, reqs


def window(seed: int, cfg: dict, reqs: list):
    types = {g["type"] for g in cfg["groups"]}
    if "mamba" not in types or "sliding_window" not in types:
        return "", cfg, reqs
    rng = random.Random(seed * 7919 + 17)
    bs = cfg["block_size"]
    unit = max(2, bs // rng.choice([2, 4]))
    cfg["prefix_match_unit"] = unit
    for g in cfg["groups"]:
        if g["type"] == "sliding_window":
            g["block_size"] = unit
            cfg["num_blocks"] += -(-cfg["max_model_len"] // unit)
    return f"oxuw{seed}", cfg, reqs


if __name__ == "__main__":
    flag = sys.argv[1] if sys.argv[1] in ("--retention", "--decode", "--window", "--no-mamba") else ""
    out, seeds = Path(sys.argv[1 + bool(flag)]), sys.argv[2 + bool(flag):]
    out.mkdir(parents=True, exist_ok=True)
    for s in seeds:
        name, cfg, reqs = make(int(s), flag)
        if not name:
            continue
        with open(out / f"{name}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)
