# ruff: noqa
"""Dev tool (not a test): random scheduler traces, without drafts, with a chunked local
attention group beside full-attention or sliding-window groups of other block sizes, for
oracle_chunked_mixed.py (this folder).

    python3 tests/data/sched_chunked_mixed/make_chunked_mixed.py OUT_DIR FIRST LAST   # seeds FIRST..LAST-1

Seed N writes `cmN.trace.jsonl`. Each draws, from `random.Random(N)`: a base block B (8 or 16)
and where the chunked local group's block sits among the groups' (`shape`):

- "finest": chunked at B beside one or two groups at 2B or 4B (finer than the lcm);
- "between": a full group at B, chunked at 2B, the third group at 4B (finer than the lcm,
  coarser than the hash block);
- "coarsest": chunked at the lcm, 2B or 4B, beside groups at B or 2B (equal to the lcm);
- "odd": sizes 2B and 3B (lcm 6B): chunked at either (finer than the lcm) or at 6B beside
  2B and 3B (equal to it);

the other groups full attention, or one of them a sliding window (19, 32 or 64 tokens), the
chunk 1, 2 or 4 of the chunked group's blocks; prefix caching on 3 in 5; sync or async;
max_model_len 256 or 384; a pool from what one max_model_len request needs (every group counted
whole) to 40 blocks more, small 1 in 2 (preemptions); 2-8 sequences, a budget of 48-256
tokens, a long-prefill threshold; KV events 1 in 2; the requests of
../sched_spec_mamba/make_spec_mamba.py over the lcm.

    python3 tests/data/sched_chunked_mixed/make_chunked_mixed.py --short OUT_DIR FIRST LAST

writes `cmsN.trace.jsonl`: seed N's trace with half its pool, which vLLM's start-up check
refuses before any lookup.
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


def sizes(rng: random.Random, b: int) -> tuple[str, int, list[int]]:
    """The shape, the chunked group's block and the other groups' blocks."""
    shape = rng.choice(["finest", "finest", "between", "coarsest", "coarsest", "odd"])
    if shape == "finest":
        return shape, b, [rng.choice([2 * b, 4 * b]) for _ in range(rng.choice([1, 2]))]
    if shape == "between":
        return shape, 2 * b, [b, 4 * b]
    if shape == "coarsest":
        top = rng.choice([2 * b, 4 * b])
        others = [rng.choice([s for s in (b, 2 * b) if s < top]) for _ in range(rng.choice([1, 2]))]
        return shape, top, others
    pick = rng.choice([2 * b, 3 * b, 6 * b])
    return shape, pick, [2 * b, 3 * b] if pick == 6 * b else [5 * b - pick]


def trace(seed: int) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    b = rng.choice([8, 16])
    shape, chunked_bs, others = sizes(rng, b)
    caching = rng.random() < 0.6
    mml = rng.choice([256, 384])
    chunk = chunked_bs * rng.choice([1, 2, 4])
    groups = [{"type": "full", "block_size": s} for s in others]
    if rng.random() < 0.4:
        i = rng.randrange(len(groups))
        groups[i] = {"type": "sliding_window", "sliding_window": rng.choice([19, 32, 64]),
                     "block_size": others[i]}
    if not any(g["type"] == "full" for g in groups) and rng.random() < 0.5:
        groups.insert(0, {"type": "full", "block_size": others[0]})
    groups.insert(rng.randrange(len(groups) + 1),
                  {"type": "chunked_local", "attention_chunk_size": chunk,
                   "block_size": chunked_bs})
    lcm = math.lcm(*(g["block_size"] for g in groups))
    need = sum(-(-mml // g["block_size"]) for g in groups)
    small = rng.random() < 0.5
    pool = need + 1 + (rng.choice([0, 1, 3]) if small else rng.choice([10, 20, 40]))
    cfg = {**make_spec_mamba.base_config(rng, b, pool, mml, groups, caching),
           "async_scheduling": rng.random() < 0.5}
    lines = [json.dumps({"config": cfg}), *make_spec_mamba.requests(rng, lcm, mml, 0.35)]
    return "cm" + str(seed), lines


def short(seed: int) -> tuple[str, list[str]]:
    name, lines = trace(seed)
    first = json.loads(lines[0])
    first["config"]["num_blocks"] //= 2
    return "cms" + name[2:], [json.dumps(first), *lines[1:]]


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--short"]
    make_spec_mamba.write_traces(short if "--short" in sys.argv[1:] else trace,
                                 args[0], int(args[1]), int(args[2]))
