# ruff: noqa
"""Dev tool (not a test): CPU-tier traces with a chunked local attention group and a
`prefix_match_unit` finer than some block, for the oracle's `sched_offload` patched as
../offload_mixed_pmu/README.md says (README.md here).

    python3 tests/data/offload_chunked_pmu/make_cases.py [--unit | --finer | --spec | --spec-unit] OUT_DIR SEED...

Case `ocNNN` is ../offload_mixed/make_cases.py's case NNN (its layout, pool, tier, requests,
imported) with a chunked local group inserted at the groups' lcm (the hit alignment where
partial hash hits are off), its chunk 1, 2 or 4 of its blocks drawn from
`random.Random(NNN * 7919 + 29)`, the pool grown by one max_model_len request's blocks in it,
and the unit the groups' gcd or a half or a quarter of it (at least 2). With `--unit` (case
`ocuNNN`, only the layouts holding a Mamba group) the unit is B/2 or B/4 below the Mamba block
B, every sliding window's block and the chunked group's made the unit, so that vLLM's partial
hash hits stay on and the chunked group sits at the hash block; the pool grows by their
max_model_len in those blocks. With `--finer` (case `ocfNNN`) the chunked group sits at the
finest of the other groups' blocks instead, below the lcm: vLLM fails at its first lookup.
With `--spec` (`--spec-unit`) the `ocN` (`ocuN`) case with drafts drawn from
`random.Random(N * 7919 + 5)` as ../offload_mixed_spec/make_cases.py draws them (method ngram
2 in 5, else eagle3, eagle or mtp; ../offload_spec_more's `add_spec`: K 1-3, an acceptance
rate, a seed; the pool grown by each attention group's lookahead; for the EAGLE methods the
legacy hashes a third of the time and one full group flagged two times in three): case `osN`
(`osuN`), `omN` (`omuN`) for mtp.
"""

import importlib.util
import json
import math
import random
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "ox_cases", Path(__file__).resolve().parent.parent / "offload_mixed" / "make_cases.py")
ox = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ox)
_spec = importlib.util.spec_from_file_location(
    "more_cases", Path(__file__).resolve().parent.parent / "offload_spec_more" / "make_cases.py")
more = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(more)


def with_drafts(seed: int, name: str, cfg: dict) -> str:
    """Drafts into `cfg` (../offload_mixed_spec's draws); the case's name with them."""
    rng = random.Random(seed * 7919 + 5)
    method = rng.choice(["ngram", "ngram", "eagle3", "eagle", "mtp"])
    groups = more.add_spec(cfg, rng, method)
    k, bs = cfg["num_speculative_tokens"], cfg["block_size"]
    cfg["num_blocks"] += sum(-(-k // g.get("block_size", bs)) + 1
                             for g in groups if g["type"] != "mamba")
    if method != "ngram":
        if rng.random() < 0.33:
            cfg["disable_lookahead_block_hashes"] = True
        full = [i for i, g in enumerate(groups) if g["type"] == "full"]
        if full and rng.random() < 0.67:
            cfg["eagle_groups"] = [rng.choice(full)]
    return ("om" if method == "mtp" else "os") + name[2:]


def make(seed: int, at_unit: bool, finer: bool = False):
    cfg, reqs = ox.make(seed)
    rng = random.Random(seed * 7919 + 29)
    bs, mml = cfg["block_size"], cfg["max_model_len"]
    groups = cfg["groups"]
    if at_unit:
        if not any(g["type"] == "mamba" for g in groups):
            return "", cfg, reqs
        unit = max(2, bs // rng.choice([2, 4]))
        for g in groups:
            if g["type"] == "sliding_window":
                g["block_size"] = unit
                cfg["num_blocks"] += -(-mml // unit)
        block = unit
    elif finer:
        block = min(g.get("block_size", bs) for g in groups if g["type"] != "mamba")
    else:
        block = math.lcm(*(g.get("block_size", bs) for g in groups))
    chunked = {"type": "chunked_local", "attention_chunk_size": block * rng.choice([1, 2, 4]),
               "block_size": block}
    groups.insert(rng.randrange(len(groups) + 1), chunked)
    cfg["num_blocks"] += -(-mml // block)
    if not at_unit:
        gcd = math.gcd(*(g.get("block_size", bs) for g in groups))
        unit = max(2, gcd // rng.choice([1, 2, 4]))
    cfg["prefix_match_unit"] = unit
    return f"oc{'u' if at_unit else 'f' if finer else ''}{seed}", cfg, reqs


if __name__ == "__main__":
    flag = sys.argv[1] if sys.argv[1].startswith("--") else ""
    at_unit, finer = flag in ("--unit", "--spec-unit"), flag == "--finer"
    out, seeds = Path(sys.argv[1 + bool(flag)]), sys.argv[2 + bool(flag):]
    out.mkdir(parents=True, exist_ok=True)
    for s in seeds:
        name, cfg, reqs = make(int(s), at_unit, finer)
        if not name:
            continue
        if flag.startswith("--spec"):
            name = with_drafts(int(s), name, cfg)
        with open(out / f"{name}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)
