# ruff: noqa
"""Dev tool (not a test): seeded random traces for oracle_offload_spec.py whose sliding-window
groups are all flagged as the draft's (`eagle_groups`), which make_cases.py (this folder) draws
in few cases: the tier's lookup then pops each flagged group's volatile chunk once a pass, and
a flagged window needs one chunk more after a gap.

    python3 tests/data/offload_spec/make_cases_flagged.py [--one] OUT_DIR SEED...

Case `osfNNN` is seeded by NNN: eagle3 (the legacy hashes a third of the time), K 1-3, the
rest of make_cases.py's draws (tier, blocks, chunks, latencies, events, requests: the same
functions), but the groups are always full attention beside one or two sliding windows
(offload_hybrid's window draw), flagged all (2 in 3) or only the windows; with `--one`,
`osfoNNN`, the same draws with only the widest window flagged (the tier looks it up first of
the windows, so an unflagged one may tighten the hit after it popped).
"""

import json
import random
import sys
from pathlib import Path

from make_cases import fit_mml, hybrid, tier_config, tier_requests


def make(seed: int, one: bool = False) -> tuple[dict, list[dict]]:
    rng = random.Random(seed * 104729 + 13)
    bs = rng.choice([4, 8, 16, 16])
    bpc = rng.choice([1, 1, 2])
    k = rng.randint(1, 3)
    is_async = rng.random() < 0.5
    num_blocks = rng.choice([32, 48, 64])
    mnbt = rng.choice([4, 8, 16]) * bs
    cfg, in_flight = tier_config(rng, bs, bpc, k, "eagle3", is_async, num_blocks, mnbt,
                                 [8, 16, 32], 0.3)
    while True:
        groups = hybrid.draw_groups(rng, bs)
        if all(g["type"] != "chunked_local" for g in groups):
            break
    cfg["groups"] = groups
    mml = fit_mml(groups, num_blocks, bs, in_flight)
    windows = [i for i, g in enumerate(groups) if g["type"] == "sliding_window"]
    cfg["eagle_groups"] = list(range(len(groups))) if rng.random() < 2 / 3 else windows
    if one:
        widest = max(windows, key=lambda i: (groups[i]["sliding_window"], -i))
        cfg["eagle_groups"] = [widest]
    cfg["max_model_len"] = mml
    return cfg, tier_requests(rng, seed, bs, bpc, mml)


def main() -> None:
    one = sys.argv[1] == "--one"
    out = Path(sys.argv[1 + one])
    out.mkdir(parents=True, exist_ok=True)
    for seed in map(int, sys.argv[2 + one:]):
        cfg, reqs = make(seed, one)
        with open(out / f"osf{'o' * one}{seed}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)


if __name__ == "__main__":
    main()
