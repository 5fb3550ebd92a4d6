# ruff: noqa
"""Dev tool (not a test): seeded random traces for oracle_offload_spec.py aimed at the CPU
tier's second lookup pass over windowed groups with EAGLE's pops (`kvcore/offload/
hybrid_lookup.py`'s `verified`; ../mutants/README.md, mutants HL1, HL6 and HL7).

    python3 tests/data/offload_spec/make_cases_second_pass.py [--one] OUT_DIR SEED...

Case `ospNNN` (`ospoNNN` with `--one`) is seeded by NNN. A second pass needs a narrower window,
looked up after a wider one popped, to end the hit well below the wider one's hit; the wider
window must then miss near the new end. So: eagle3 (legacy hashes a third of the time), K 1-3,
sync or async, blocks of 4 or 8 (one block a chunk mostly), full attention beside two or three
sliding windows of different widths in a random group order (the keys of a store job go group
by group, so a tier that fills mid-job or evicts keeps one window's chunks and not another's),
a small tier (4-16 chunks, LRU or ARC), retention 0 (vLLM's default: a window keeps only the
tails before each prompt's end), dense (null) or a few chunks. The requests are prefixes of one
long document (of many lengths, so the windows' tails lie at many ends), some with a suffix of
their own, and a few other documents that push the GPU pool's blocks out. Every window is
flagged (and the full group half the time); with `--one` only the widest (a narrower one,
unflagged, then un-verifies it).
"""

import json
import random
import sys
from pathlib import Path

from make_cases import hybrid


def window(rng: random.Random, bs: int, blocks: int) -> dict:
    w = blocks * bs + rng.choice([0, 0, 1, -1, bs // 2])
    return {"type": "sliding_window", "sliding_window": max(2, w)}


def make(seed: int, one: bool = False) -> tuple[dict, list[dict]]:
    rng = random.Random(seed * 7057 + 29)
    bs = rng.choice([4, 8, 8])
    bpc = rng.choice([1, 1, 1, 2])
    c = bs * bpc
    k = rng.randint(1, 3)
    is_async = rng.random() < 0.5
    mnbt = rng.choice([4, 8, 16]) * bs
    sizes = sorted(rng.sample(range(1, 9), rng.choice([2, 2, 3])), reverse=True)
    wins = [window(rng, bs, s) for s in sizes]
    groups = [{"type": "full"}] + wins
    rng.shuffle(groups)
    windows = [i for i, g in enumerate(groups) if g["type"] == "sliding_window"]
    widest = max(windows, key=lambda i: (groups[i]["sliding_window"], -i))
    if one:
        flagged = [widest]
    else:
        flagged = list(range(len(groups))) if rng.random() < 0.5 else windows
    cfg = {"block_size": bs,
           "max_num_seqs": rng.choice([2, 4, 8]), "max_num_batched_tokens": mnbt,
           "kv_offloading_size_chunks": rng.choice([8, 16, 24, 32, 48]),
           "eviction_policy": rng.choice(["lru", "arc"]),
           "load_steps": rng.choice([1, 1, 2]), "store_steps": rng.choice([1, 1, 2]),
           "kv_events": rng.random() < 0.3,
           "num_speculative_tokens": k,
           "spec_acceptance_rate": rng.choice([0.3, 0.5, 0.7, 0.9]),
           "spec_seed": rng.randrange(1000), "spec_method": "eagle3"}
    if bpc > 1:
        cfg["offload_block_size"] = c
    if rng.random() < 0.33:
        cfg["disable_lookahead_block_hashes"] = True
    if is_async:
        cfg["async_scheduling"] = True
    r = rng.random()
    if r < 0.25:
        cfg["prefix_cache_retention_interval"] = None
    elif r < 0.45:
        cfg["prefix_cache_retention_interval"] = rng.choice([2, 3, 4]) * c
    cfg["groups"] = groups
    cfg["eagle_groups"] = flagged
    in_flight = mnbt * (2 if is_async else 1) + k
    mml = rng.choice([24, 32, 48]) * bs
    num_blocks = hybrid.needed_blocks(groups, mml, bs, in_flight) + rng.choice([4, 16, 32])
    cfg["num_blocks"] = num_blocks
    cfg["max_model_len"] = mml
    doc = [rng.randrange(1, 30000) for _ in range(mml)]
    others = [[rng.randrange(1, 30000) for _ in range(rng.randrange(c, max(c + 1, mml // 2)))]
              for _ in range(2)]
    reqs, step = [], 0
    for i in range(rng.randrange(8, 18)):
        x = rng.random()
        if x < 0.6:
            p = doc[:rng.randrange(2 * c, max(2 * c + 1, mml - 10))]
        elif x < 0.8:
            p = doc[:rng.randrange(c, max(c + 1, mml - 10))]
            p = p + [rng.randrange(1, 30000) for _ in range(rng.randrange(1, 3 * c))]
        else:
            p = list(rng.choice(others))
        p = p[: max(1, mml - 10)]
        out = rng.randrange(1, max(2, min(16, mml - len(p))))
        step += rng.choice([0, 1, 3, 6, 10])
        reqs.append({"id": f"p{seed}r{i}", "prompt_token_ids": p, "output_length": out,
                     "arrival_step": step})
    return cfg, reqs


def main() -> None:
    one = sys.argv[1] == "--one"
    out = Path(sys.argv[1 + one])
    out.mkdir(parents=True, exist_ok=True)
    for seed in map(int, sys.argv[2 + one:]):
        cfg, reqs = make(seed, one)
        with open(out / f"osp{'o' * one}{seed}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)


if __name__ == "__main__":
    main()
