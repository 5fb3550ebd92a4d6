# ruff: noqa
"""Dev tool (not a test): ../sched_mamba_mixed/make_mamba_mixed.py's traces (Mamba groups in
"align" mode beside attention groups of other block sizes) with an MTP draft, for
../sched_spec_eagle_mixed/oracle_eagle_mixed.py run with `--mtp`.

    python3 tests/data/sched_spec_mtp_mixed/make_mtp_mixed.py OUT_DIR FIRST LAST   # mtmN
    python3 tests/data/sched_spec_mtp_mixed/make_mtp_mixed.py OUT_DIR FIRST LAST --pmu   # mtpuN
    python3 tests/data/sched_spec_mtp_mixed/make_mtp_mixed.py OUT_DIR FIRST LAST [--pmu] --method eagle3

(`--pmu`: the trace is ../sched_mamba_mixed_pmu/make_mixed_pmu.py's, with a `prefix_match_unit`;
`--method eagle3`, `eagle` or `ngram`: that method instead of mtp, named `e3`, `ea`, `ng` for `mt`, answered
without `--mtp`.)

Seed N takes make_mamba_mixed.py's trace N and draws, from `random.Random(N * 7919 + 3)`: K 1-3,
an acceptance rate 0.3-0.9, the spec seed, sync or async scheduling, the legacy hashes
(`disable_lookahead_block_hashes`) 1 in 3, and 3 in 4 the first full-attention group flagged as
the draft's (`eagle_groups`: Qwen3-Next's MTP layer is a full-attention layer); the pool grows
by the K speculative blocks each Mamba group keeps (vLLM's start-up check).
"""

import importlib.util
import json
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


def trace(seed: int, pmu: bool = False, method: str = "mtp") -> tuple[str, list[str]]:
    _, lines = (make_mixed_pmu if pmu else make_mamba_mixed).trace(seed)
    rng = random.Random(seed * 7919 + 3)
    first = json.loads(lines[0])
    cfg = first["config"]
    k = rng.randint(1, 3)
    nm = sum(g["type"] == "mamba" for g in cfg["groups"])
    cfg["num_blocks"] += nm * k
    cfg.update({"async_scheduling": rng.random() < 0.5, "num_speculative_tokens": k,
                "spec_acceptance_rate": rng.choice([0.3, 0.5, 0.7, 0.9]),
                "spec_seed": rng.randrange(1000), "spec_method": method})
    if method == "ngram":
        del cfg["spec_method"]
    if rng.random() < 1 / 3 and method != "ngram":
        cfg["disable_lookahead_block_hashes"] = True
    full = [i for i, g in enumerate(cfg["groups"]) if g["type"] == "full"]
    if full and rng.random() < 0.75 and method != "ngram":
        cfg["eagle_groups"] = [full[0]]
    name = {"mtp": "mt", "eagle3": "e3", "eagle": "ea", "ngram": "ng"}[method] + ("pu" if pmu else "m")
    return name + str(seed), [json.dumps(first), *lines[1:]]


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    method = sys.argv[sys.argv.index("--method") + 1] if "--method" in sys.argv else "mtp"
    for seed in range(int(sys.argv[2]), int(sys.argv[3])):
        name, lines = trace(seed, "--pmu" in sys.argv, method)
        (out / f"{name}.trace.jsonl").write_text("\n".join(lines) + "\n")
