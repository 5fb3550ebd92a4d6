# ruff: noqa
"""Dev tool (not a test): seeded random traces for oracle_offload_spec.py, the CPU tier with
speculative decoding (README.md here).

    python3 tests/data/offload_spec/make_cases.py OUT_DIR SEED...

Case `osNNN` is seeded by NNN: ngram (40%) or eagle3 (the legacy
`disable_lookahead_block_hashes` a third of those), K 1-3, acceptance 0.3-0.9, sync or async,
a tier of 4-32 chunks (evicts), blocks of 4-16 tokens, 1-2 blocks a chunk, LRU/ARC, store and
load latencies, KV events half the time. Requests share a few documents
(offload_hybrid/make_cases.py's `requests`, imported) so the GPU pool loses them and the tier
returns them. A third of the cases are hybrid (`groups`: full + sliding, sliding + full,
full + two slidings, full + chunked local; offload_hybrid's `draw_groups`), eagle3 ones
flagging `eagle_groups` (one of the groups, or all) two times in three; half the one-group
eagle3 cases give that group as `groups` and flag it.
"""

import importlib.util
import json
import random
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "hybrid_cases", Path(__file__).resolve().parent.parent / "offload_hybrid" / "make_cases.py")
hybrid = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hybrid)


def tier_config(rng: random.Random, bs: int, bpc: int, k: int, method: str, is_async: bool,
                num_blocks: int, mnbt: int, chunks: list[int], full_prompts: float
                ) -> tuple[dict, int]:
    """The config's tier and spec keys, drawn in this order: sequences, the tier's size (of
    ``chunks``), eviction, load and store latencies, KV events, the acceptance rate, the spec
    seed, with eagle3 the legacy hashes (a third), then the full-prompt store (``full_prompts``
    of the time); returns it and the tokens in flight. make_cases_flagged.py draws its own here."""
    cfg = {"block_size": bs, "num_blocks": num_blocks,
           "max_num_seqs": rng.choice([2, 4, 8]), "max_num_batched_tokens": mnbt,
           "kv_offloading_size_chunks": rng.choice(chunks),
           "eviction_policy": rng.choice(["lru", "arc"]),
           "load_steps": rng.choice([1, 1, 2]), "store_steps": rng.choice([1, 1, 2]),
           "kv_events": rng.random() < 0.5,
           "num_speculative_tokens": k,
           "spec_acceptance_rate": rng.choice([0.3, 0.5, 0.7, 0.9]),
           "spec_seed": rng.randrange(1000), "spec_method": method}
    if bpc > 1:
        cfg["offload_block_size"] = bpc * bs
    if method == "eagle3" and rng.random() < 0.33:
        cfg["disable_lookahead_block_hashes"] = True
    if is_async:
        cfg["async_scheduling"] = True
    if rng.random() < full_prompts:
        cfg["offload_prompt_only"] = False
    return cfg, mnbt * (2 if is_async else 1) + k


def fit_mml(groups: list[dict], num_blocks: int, bs: int, in_flight: int) -> int:
    """The largest max_model_len (from the pool's share per group down, 2 blocks at least)
    whose needed blocks fit the pool less one."""
    mml = (num_blocks // len(groups)) * bs
    while mml > 2 * bs and hybrid.needed_blocks(groups, mml, bs, in_flight) > num_blocks - 1:
        mml -= bs
    return mml


def tier_requests(rng: random.Random, seed: int, bs: int, bpc: int, mml: int) -> list[dict]:
    """offload_hybrid's requests over the tier's chunks, their ids `sSEEDrI`."""
    reqs = hybrid.requests(rng, seed, bs * bpc, mml, False)
    for i, r in enumerate(reqs):
        r["id"] = f"s{seed}r{i}"
    return reqs


def make(seed: int) -> tuple[dict, list[dict]]:
    rng = random.Random(seed * 104729 + 7)
    bs = rng.choice([4, 8, 16, 16])
    bpc = rng.choice([1, 1, 2])
    k = rng.randint(1, 3)
    method = "ngram" if rng.random() < 0.4 else "eagle3"
    is_async = rng.random() < 0.5
    hybrid_groups = rng.random() < 0.35
    num_blocks = rng.choice([24, 32, 48, 64])
    mnbt = rng.choice([4, 8, 16]) * bs
    cfg, in_flight = tier_config(rng, bs, bpc, k, method, is_async, num_blocks, mnbt,
                                 [4, 8, 16, 32], 0.15)
    if hybrid_groups:
        groups = hybrid.draw_groups(rng, bs)
        cfg["groups"] = groups
        mml = fit_mml(groups, num_blocks, bs, in_flight)
        if method == "eagle3" and rng.random() < 0.67:
            n = len(groups)
            cfg["eagle_groups"] = rng.choice([[rng.randrange(n)], list(range(n))])
    else:
        mml = min(512, (num_blocks - 2) * bs)
    cfg["max_model_len"] = mml
    reqs = tier_requests(rng, seed, bs, bpc, mml)
    if method == "eagle3" and not hybrid_groups and rng.random() < 0.5:
        # the one group holds the draft's layers too, as vLLM's planning puts an EAGLE
        # draft beside a uniform target (its connector then flags it)
        cfg["groups"] = [{"type": "full"}]
        cfg["eagle_groups"] = [0]
    return cfg, reqs


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for seed in map(int, sys.argv[2:]):
        cfg, reqs = make(seed)
        with open(out / f"os{seed}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)


if __name__ == "__main__":
    main()
