# ruff: noqa
"""Dev tool (not a test): seeded random traces for oracle_spec_pp_mamba.py, speculative decoding
over Mamba groups with pipeline parallelism (README.md here).

    python3 tests/data/sched_spec_pp_mamba/make_cases.py [--pmu] OUT_DIR FIRST LAST   # seeds FIRST..LAST-1

Seed N writes `ppmN.trace.jsonl` (`ppmtpN` for method mtp: give those to the oracle in a call of
their own). The case is ../sched_spec_mamba/make_spec_mamba.py's trace for seed N (imported: the
method, K, the rate, sync or async, "align" or "none" mode, the legacy hashes, the flagged
groups, Mamba1 or Mamba2 groups, a pool from vLLM's start-up minimum up, KV events, 3-9
requests over shared prefixes), then, from `random.Random(N * 7919 + 5)`: PP 2-4
(2 / 3 / 4 in 2 / 1 / 1) and, a third of the time, a pool of just the blocks vLLM's start-up
check needs for one max_model_len request (a deeper queue holds more requests at once: more
preemptions), one time in 15 one block fewer (vLLM refuses to start).

`--pmu`: ../sched_spec_pmu/make_spec_pmu.py's trace for seed N instead (a `prefix_match_unit`
finer than the block: partial hash hits), `ppuN` / `pputpN`, its pool kept; its attention-only
`pma*` traces are skipped (kvcli refuses such a unit, and vLLM turns no partial hits on).
"""

import json
import random
import sys
from pathlib import Path

# ../sched_spec_pp/make_cases.py's loader (that module, not this one of the same name)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sched_spec_pp"))
from make_cases import DATA, _load


spec_mamba = _load("make_spec_mamba", DATA / "sched_spec_mamba" / "make_spec_mamba.py")
spec_pmu = _load("make_spec_pmu", DATA / "sched_spec_pmu" / "make_spec_pmu.py")


def make(seed: int, pmu: bool = False) -> tuple[str, list[str]] | None:
    name, lines = (spec_pmu if pmu else spec_mamba).trace(seed)
    rng = random.Random(seed * 7919 + 5)
    cfg = json.loads(lines[0])["config"]
    if not any(g["type"] == "mamba" for g in cfg["groups"]):
        return None
    cfg["pipeline_parallel_size"] = rng.choice([2, 2, 3, 4])
    r = rng.random()
    if r < 0.4 and not pmu:
        k, bs, mml = cfg["num_speculative_tokens"], cfg["block_size"], cfg["max_model_len"]
        mamba = [g for g in cfg["groups"] if g["type"] == "mamba"]
        ckpt = int(bool(mamba[0].get("checkpoint")))
        per = (2 + ckpt + k) if cfg["enable_prefix_caching"] else (1 + k)
        # (vLLM's start-up check wants this many usable: one block short below 0.4)
        cfg["num_blocks"] = len(mamba) * per + -(-mml // bs) + int(r < 1 / 3)
    tag = "ppu" if pmu else "ppm"
    name = tag + ("tp" if cfg.get("spec_method") == "mtp" else "") + str(seed)
    return name, [json.dumps({"config": cfg}), *lines[1:]]


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--pmu"]
    out, first, last = Path(args[0]), int(args[1]), int(args[2])
    for seed in range(first, last):
        made = make(seed, "--pmu" in sys.argv[1:])
        if made is not None:
            name, lines = made
            (out / f"{name}.trace.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
