# ruff: noqa
"""Dev tool (not a test): random scheduler traces with a chunked local attention group at the
hash block beside Mamba groups in "align" mode (prefix caching on), for oracle_chunked_mamba.py
(this folder).

    python3 tests/data/sched_chunked_mamba/make_chunked_mamba.py OUT_DIR FIRST LAST   # seeds FIRST..LAST-1
    python3 tests/data/sched_chunked_mamba/make_chunked_mamba.py --tight OUT_DIR FIRST LAST
    python3 tests/data/sched_chunked_mamba/make_chunked_mamba.py --coarse OUT_DIR FIRST LAST   # cxN

Seed N writes `ckN.trace.jsonl`. Each draws, from `random.Random(N)`: the block B (8, 16 or 32:
the config line's, the Mamba groups'), 1-2 Mamba groups (Mamba1, or Mamba2 with a prefill
checkpoint), the layout: `prefix_match_unit` B/2 or B/4 (at least 2) with the chunked group at
the unit (3 in 6), no unit with the chunked group at B/2, the groups' gcd (2 in 6), or one of
those with a group that turns vLLM's partial hash hits off (1 in 6: a sliding window of 19, 32
or 64 tokens at B, or a second chunked group at B); the chunked group's attention chunk 2, 3,
4 or 8 of its blocks; 1 in 2 a full-attention group at B, 2B, the hash block or 4 of it; the
groups in a random order; max_model_len 256 or 384; a pool from what one max_model_len request
needs to 60 blocks more; the scheduler knobs and requests of
../sched_spec_mamba/make_spec_mamba.py; with Mamba2 a retention interval 1 in 3 (2 or 4 times
the groups' lcm, or dense). `--tight`: the pool at most 2 blocks past that need (preemptions).
`--coarse` (`cxN`): a unit B/2 or B/4 and the chunked group at B or 2B, coarser than the unit,
so partial hash hits are off (vLLM runs it where the chunked block is the groups' lcm).
"""

import importlib.util
import json
import math
import random
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "make_spec_mamba", Path(__file__).resolve().parent.parent / "sched_spec_mamba" / "make_spec_mamba.py")
make_spec_mamba = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_spec_mamba)


def sized(g: dict, size: int, bs: int) -> dict:
    return {**g, "block_size": size} if size != bs else g


TIGHT = "--tight" in sys.argv
COARSE = "--coarse" in sys.argv
for flag in ("--tight", "--coarse"):
    if flag in sys.argv:
        sys.argv.remove(flag)


def trace(seed: int) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    bs = rng.choice([8, 16, 32])
    ckpt = rng.random() < 0.5
    nm = rng.choice([1, 2])
    groups = [{"type": "mamba", "checkpoint": True} if ckpt else {"type": "mamba"}
              for _ in range(nm)]
    layout = rng.choice(["unit", "unit", "unit", "gcd", "gcd", "off"])
    unit = None
    if layout == "gcd" or (layout == "off" and rng.random() < 0.4):
        hb = bs // 2
    else:
        unit = hb = max(2, bs // rng.choice([2, 4]))
    chunked_bs = hb
    if COARSE:
        unit = hb = max(2, bs // rng.choice([2, 4]))
        chunked_bs = rng.choice([bs, bs, 2 * bs])
    chunk = chunked_bs * rng.choice([2, 3, 4, 8])
    others = [sized({"type": "chunked_local", "attention_chunk_size": chunk}, chunked_bs, bs)]
    if rng.random() < 0.5:
        others.append(sized({"type": "full"}, rng.choice([bs, 2 * bs, hb, 4 * hb]), bs))
    if layout == "off" and not COARSE:
        if rng.random() < 0.5:
            others.append({"type": "sliding_window", "sliding_window": rng.choice([19, 32, 64])})
        else:
            others.append({"type": "chunked_local", "attention_chunk_size": 2 * bs})
    for g in others:
        groups.insert(rng.randrange(len(groups) + 1), g)
    mml = rng.choice([256, 384])
    need = 0
    for g in groups:
        size = g.get("block_size", bs)
        if g["type"] == "mamba":
            need += 3 if ckpt else 2
        elif g["type"] == "chunked_local":
            need += -(-min(g["attention_chunk_size"] + 256, mml) // size)
        else:
            need += -(-mml // size)
    cfg = make_spec_mamba.base_config(rng, bs, need + 1 + rng.choice([0, 0, 1, 2] if TIGHT else [0, 2, 5, 10, 20, 60]),
                                      mml, groups, True)
    if unit is not None:
        cfg["prefix_match_unit"] = unit
    if ckpt and rng.random() < 1 / 3:
        lcm = math.lcm(*(g.get("block_size", bs) for g in groups))
        cfg["prefix_cache_retention_interval"] = rng.choice([None, 2 * lcm, 4 * lcm])
    lines = [json.dumps({"config": cfg}), *make_spec_mamba.requests(rng, bs, mml, 0.35)]
    return ("cx" if COARSE else "ck") + str(seed), lines


if __name__ == "__main__":
    make_spec_mamba.write_traces(trace, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
