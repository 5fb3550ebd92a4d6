# ruff: noqa
"""Dev tool (not a test): seeded random traces for oracle_offload_spec_more.py (this folder)
whose `eagle_groups` flag Mamba groups, which make_cases.py never draws (it flags the
full-attention group or none): vLLM's connector gives EAGLE's proof margin on partial tails only
to flagged groups that are no copy-on-write source, so a flagged Mamba group gets none.

    python3 tests/data/offload_spec_more/make_cases_mamba_flagged.py OUT_DIR SEED...

Seed NNN writes `mmfNNN`: ../offload_mamba_partial/make_cases.py's case NNN (its groups, unit,
tier and requests), with eagle3, K 1-3, the legacy hashes a third of the time, the pool grown as
make_cases.py grows it, and the flagged groups the Mamba groups alone (1 in 2) or every group.
"""

import random
import sys

from make_cases import PARTIAL, add_spec, write_cases


def make(seed: int) -> tuple[str, dict, list[dict]]:
    rng = random.Random(seed * 6007 + 17)
    cfg, reqs = PARTIAL.make(seed)
    groups = add_spec(cfg, rng, "eagle3")
    if rng.random() < 0.33:
        cfg["disable_lookahead_block_hashes"] = True
    mamba = [i for i, g in enumerate(groups) if g["type"] == "mamba"]
    cfg["eagle_groups"] = mamba if rng.random() < 0.5 else list(range(len(groups)))
    return f"mmf{seed}", cfg, reqs


def main() -> None:
    write_cases(make, sys.argv[1:])


if __name__ == "__main__":
    main()
