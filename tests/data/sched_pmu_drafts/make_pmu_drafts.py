# ruff: noqa
"""Dev tool (not a test): the `prefix_match_unit` layouts kvcli began running on 2026-12-06,
with drafts, for ../sched_mamba_mixed_pmu/with_unit.py eagle_mixed [--mtp].

    python3 tests/data/sched_pmu_drafts/make_pmu_drafts.py OUT_DIR FIRST LAST [--flip]   # seeds FIRST..LAST-1

Seed N writes five traces, one from each generator of those layouts: ../sched_mixed_pmu/
make_mixed_pmu.py's trace N (`xp`: full attention and sliding windows, no Mamba group),
../sched_mamba_window_pmu/make_window_pmu.py's `trace` and `chunked` N (`mw`: partial hits
beside a window at the unit; `mc`: a chunked local group there), ../sched_chunked_mamba/
make_chunked_mamba.py's N, plain and `--coarse` (`ck`: a chunked group at the hash block;
`cx`: one at B or 2B beside Mamba groups, partial hits off), and since 2026-12-07
../sched_chunked_pmu/make_chunked_pmu.py's N (`cu`: a chunked group at the lcm, or finer,
without a Mamba group; added last, so the other families' draws are unchanged). To each it adds, from
`random.Random(N * 7919 + 5 + family)`, what ../sched_spec_mtp_mixed/make_mtp_mixed.py adds:
the method (mtp, eagle3, eagle or ngram), K 1-3, an acceptance rate 0.3-0.9, the spec seed,
sync or async scheduling, the legacy hashes (`disable_lookahead_block_hashes`) 1 in 3 and,
3 in 4, the first full-attention group flagged as the draft's (`eagle_groups`), neither with
ngram; the pool grows by the K speculative blocks each Mamba group keeps. The file is named
family + method (`mt`, `e3`, `ea`, `ng`) + N: `mt` cases are answered with `--mtp`. `--flip`
writes the same traces with the other scheduling (sync for async, async for sync), named
with an `f` after N (the oracle takes the mode from the config line).
"""

import importlib.util
import json
import random
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


mixed_pmu = _load("make_mixed_pmu", DATA / "sched_mixed_pmu" / "make_mixed_pmu.py")
window_pmu = _load("make_window_pmu", DATA / "sched_mamba_window_pmu" / "make_window_pmu.py")
chunked_mamba = _load("make_chunked_mamba", DATA / "sched_chunked_mamba" / "make_chunked_mamba.py")
chunked_pmu = _load("make_chunked_pmu", DATA / "sched_chunked_pmu" / "make_chunked_pmu.py")


def _coarse(seed: int):
    chunked_mamba.COARSE = True
    try:
        return chunked_mamba.trace(seed)
    finally:
        chunked_mamba.COARSE = False


FAMILIES = {"xp": mixed_pmu.trace, "mw": window_pmu.trace, "mc": window_pmu.chunked,
            "ck": chunked_mamba.trace, "cx": _coarse, "cu": chunked_pmu.trace}
CODES = {"mtp": "mt", "eagle3": "e3", "eagle": "ea", "ngram": "ng"}


def drafted(family: str, seed: int, flip: bool = False) -> tuple[str, list[str]]:
    _, lines = FAMILIES[family](seed)
    rng = random.Random(seed * 7919 + 5 + list(FAMILIES).index(family))
    first = json.loads(lines[0])
    cfg = first["config"]
    method = rng.choice(list(CODES))
    k = rng.randint(1, 3)
    cfg["num_blocks"] += sum(g["type"] == "mamba" for g in cfg["groups"]) * k
    cfg.update({"async_scheduling": rng.random() < 0.5, "num_speculative_tokens": k,
                "spec_acceptance_rate": rng.choice([0.3, 0.5, 0.7, 0.9]),
                "spec_seed": rng.randrange(1000), "spec_method": method})
    if method == "ngram":
        del cfg["spec_method"]
    if rng.random() < 1 / 3 and method != "ngram" and cfg.get("enable_prefix_caching", True):
        cfg["disable_lookahead_block_hashes"] = True
    full = [i for i, g in enumerate(cfg["groups"]) if g["type"] == "full"]
    if full and rng.random() < 0.75 and method != "ngram":
        cfg["eagle_groups"] = [full[0]]
    if flip:
        cfg["async_scheduling"] = not cfg["async_scheduling"]
    name = family + CODES[method] + str(seed) + ("f" if flip else "")
    return name, [json.dumps(first), *lines[1:]]


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for seed in range(int(sys.argv[2]), int(sys.argv[3])):
        for family in FAMILIES:
            name, lines = drafted(family, seed, "--flip" in sys.argv)
            (out / f"{name}.trace.jsonl").write_text("\n".join(lines) + "\n")
