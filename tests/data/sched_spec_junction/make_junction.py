# ruff: noqa
"""Dev tool (not a test): random scheduler traces for vLLM's opt-in shared-prefix Mamba
checkpoint (`enable_mamba_shared_prefix_checkpoint`), for oracle_junction.py (this folder).

    python3 tests/data/sched_spec_junction/make_junction.py OUT_DIR FIRST LAST   # seeds FIRST..LAST-1

Seed N writes `jN.trace.jsonl` (`jtpN` for method mtp: answered with `--mtp`). The config line
is ../sched_spec_pmu/make_spec_pmu.py's (Mamba groups beside one full-attention group, a
`prefix_match_unit` of 4, 8 or 16 finer than the block of 32, 48 or 64) narrowed to where vLLM's
predicate holds (kv_cache_manager.py:188-193): an EAGLE-family method (eagle3 or mtp, 2 / 1),
partial hash hits (the unit), and a flagged group (the legacy hashes 1 in 2, which flag every
group when none is named; with lookahead hashes the full-attention group is named), plus
`"enable_mamba_shared_prefix_checkpoint": true`. The requests are drawn so that junctions
happen: two or three shared prefixes ending anywhere (mostly inside a Mamba block), each sent
by 2-4 siblings that diverge right after it, staggered by 0-20 steps so that an earlier
sibling's blocks are cached when a later one looks up; a resend or truncation 1 in 6.
"""

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sched_spec_mamba"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sched_spec_pmu"))
from make_spec_pmu import spec_and_unit
from make_spec_mamba import mamba_groups, request_line, sched_config, start_up_need, write_traces


def requests(rng: random.Random, bs: int, mml: int) -> list[str]:
    prefixes = []
    for _ in range(rng.choice([2, 3])):
        n = rng.randrange(bs // 2, 3 * bs + bs // 2)
        prefixes.append([rng.randrange(3, 30000) for _ in range(n)])
    lines, prev, step = [], [], 0
    for i in range(rng.randrange(5, 11)):
        r = rng.random()
        if r < 1 / 6 and prev:
            src = rng.choice(prev)
            p = src if rng.random() < 0.5 else src[:rng.randrange(1, len(src) + 1)]
        else:
            p = list(rng.choice(prefixes)) + [rng.randrange(3, 30000)
                                              for _ in range(rng.randrange(1, 2 * bs))]
        p = p[:mml - 100]
        prev.append(p)
        step += rng.choice([0, 1, 2, 5, 10, 20])
        lines.append(request_line(rng, i, p, step, 60))
    return lines


def trace(seed: int) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    method = rng.choice(["eagle3", "eagle3", "mtp"])
    k, rate, asyn, bs, unit = spec_and_unit(rng)
    mml = rng.choice([256, 384])
    groups, full, nm, ckpt = mamba_groups(rng)
    need = start_up_need(nm, ckpt, k, bs, mml)
    cfg = sched_config(rng, bs, mml, groups, need, True, asyn, k, rate,
                       spare=(2, 5, 10, 20, 60, 60))
    cfg.update(prefix_match_unit=unit, spec_method=method)
    legacy = rng.random() < 1 / 2
    if legacy:
        cfg["disable_lookahead_block_hashes"] = True
    if not legacy or rng.random() < 0.5:
        cfg["eagle_groups"] = [full]
    cfg["enable_mamba_shared_prefix_checkpoint"] = True
    lines = [json.dumps({"config": cfg}), *requests(rng, bs, mml)]
    return ("jtp" if method == "mtp" else "j") + str(seed), lines


if __name__ == "__main__":
    write_traces(trace, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
