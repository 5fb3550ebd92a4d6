# ruff: noqa
"""Dev tool (not a test): seeded random traces for oracle_offload_junction.py (this folder): the
CPU tier over Mamba groups with EAGLE-family drafts, partial hash hits and
`"enable_mamba_shared_prefix_checkpoint": true` (README.md here).

    python3 tests/data/offload_junction/make_cases.py OUT_DIR SEED...

Seed NNN writes `ojNNN` (eagle3, 2 in 3) or `ojtNNN` (mtp: answered with `--mtp`). The layout,
tier and requests are ../offload_mamba_partial/make_cases.py's case 10 * NNN + j for the first
j in 0-9 whose groups have a full-attention group (the group whose longer hit makes the
junction); its `prefix_match_unit` is kept, or set to 16 where it drew none (vLLM's predicate
needs partial hash hits). Its requests are shared documents sent again whole, extended or cut,
so that full attention hits past Mamba's cached states. Then ../offload_spec_more's `add_spec`
(K 1-3, the pool grown by the speculative blocks), the legacy `disable_lookahead_block_hashes`
a third of the time (the tier makes them legacy anyway), the full-attention group flagged in
`eagle_groups` two times in three, and the option's key.
"""

import importlib.util
import random
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(
    "spec_more_cases", DATA / "offload_spec_more" / "make_cases.py")
MORE = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(MORE)


def make(seed: int) -> tuple[str, dict, list[dict]]:
    rng = random.Random(seed * 5303 + 29)
    for j in range(10):
        cfg, reqs = MORE.PARTIAL.make(10 * seed + j)
        if any(g["type"] == "full" for g in cfg["groups"]):
            break
    cfg.setdefault("prefix_match_unit", 16)
    method = "mtp" if rng.random() < 1 / 3 else "eagle3"
    groups = MORE.add_spec(cfg, rng, method)
    if rng.random() < 0.33:
        cfg["disable_lookahead_block_hashes"] = True
    if rng.random() < 0.67:
        cfg["eagle_groups"] = [i for i, g in enumerate(groups) if g["type"] == "full"]
    cfg["enable_mamba_shared_prefix_checkpoint"] = True
    return (f"ojt{seed}" if method == "mtp" else f"oj{seed}"), cfg, reqs


if __name__ == "__main__":
    MORE.write_cases(make, sys.argv[1:])
