# ruff: noqa
"""Dev tool (not a test): random scheduler traces with an EAGLE-family draft over KV cache
groups of different block sizes, for oracle_eagle_mixed.py (this folder).

    python3 tests/data/sched_spec_eagle_mixed/make_eagle_mixed.py OUT_DIR FIRST LAST   # seeds FIRST..LAST-1

Seed N writes `emN.trace.jsonl`. Each draws, from `random.Random(N)`: the method (eagle3, 1 in 5
eagle), K 1-3, an acceptance rate 0.3-0.9, sync or async scheduling, the target's block B (8,
16 or 32) and the draft's (2B or B/2: Qwen3-Next's EAGLE-3 draft at twice its target's,
gpt-oss-20b's at half), the target's groups: half the time 1-2 Mamba groups (Mamba1, or Mamba2
with a prefill checkpoint) beside a full-attention group, else a full-attention group with
nothing, a sliding window or a chunked local group beside it, all at B, and the draft's
full-attention group at its block appended last; prefix caching on 3 in 4 (with Mamba off is
vLLM's "none" mode), with it the legacy hashes (`disable_lookahead_block_hashes`) 1 in 3; the
draft's group flagged (`eagle_groups`) 3 in 4, always with a chunked local group in the legacy
mode (else vLLM asserts at the first lookup); max_model_len 256 or 384; a pool from about what
one max_model_len request needs to 60 blocks more; 2-8 sequences, a budget of 48-256 tokens, a
long-prefill threshold; KV events 1 in 2; the requests of ../sched_spec_mamba/make_spec_mamba.py.
"""

import importlib.util
import json
import random
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "make_spec_mamba", Path(__file__).resolve().parent.parent / "sched_spec_mamba" / "make_spec_mamba.py")
make_spec_mamba = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_spec_mamba)


def trace(seed: int) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    method = "eagle" if rng.random() < 0.2 else "eagle3"
    k = rng.randint(1, 3)
    rate = rng.choice([0.3, 0.5, 0.7, 0.9])
    asyn = rng.random() < 0.5
    bs = rng.choice([8, 16, 32])
    draft_bs = bs * 2 if rng.random() < 0.5 else bs // 2
    caching = rng.random() < 0.75
    mml = rng.choice([256, 384])
    if rng.random() < 0.5:
        ckpt = rng.random() < 0.5
        groups = [{"type": "mamba", "checkpoint": True} if ckpt else {"type": "mamba"}
                  for _ in range(rng.choice([1, 2]))]
        groups.insert(rng.randrange(len(groups) + 1), {"type": "full"})
        need = sum((2 + int(ckpt) + k) if caching else (1 + k) for g in groups
                   if g["type"] == "mamba") + -(-mml // bs)
    else:
        groups = [{"type": "full"}]
        other = rng.choice(["none", "sliding_window", "chunked_local"])
        if other == "sliding_window":
            groups.append({"type": "sliding_window", "sliding_window": rng.choice([19, 32, 64])})
        elif other == "chunked_local":
            groups.append({"type": "chunked_local", "attention_chunk_size": rng.choice([64, 128])})
        need = len(groups) * -(-mml // bs)
    groups.append({"type": "full", "block_size": draft_bs})
    need += -(-mml // draft_bs)
    cfg = {**make_spec_mamba.sched_config(rng, bs, mml, groups, need, caching, asyn, k, rate),
           "spec_method": method}
    legacy = caching and rng.random() < 1 / 3
    if legacy:
        cfg["disable_lookahead_block_hashes"] = True
    chunked = any(g["type"] == "chunked_local" for g in groups)
    if rng.random() < 0.75 or (chunked and (legacy or not caching)):
        cfg["eagle_groups"] = [len(groups) - 1]
    lines = [json.dumps({"config": cfg}), *make_spec_mamba.requests(rng, bs, mml, 0.35)]
    return "em" + str(seed), lines


if __name__ == "__main__":
    make_spec_mamba.write_traces(trace, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
