# ruff: noqa
"""Dev tool (not a test): seeded random traces for oracle_offload_spec_more.py, the CPU tier
with method mtp and with drafts over Mamba groups (README.md here).

    python3 tests/data/offload_spec_more/make_cases.py OUT_DIR SEED...

Seed NNN draws (random.Random(NNN * 6007 + 11)) one of three kinds, the layouts and requests
of the folders that recorded them without these drafts (their `make`, imported):
- `mtpNNN` (4 in 10): ../offload_spec/make_cases.py's case NNN (one group, `groups: [full]`
  flagged, or hybrid full / sliding / chunked local groups with `eagle_groups`) with its method
  made "mtp" (an ngram draw keeps no EAGLE keys: one unflagged group, or hybrid groups none
  flagged);
- `mmNNN` / `mmtNNN` (6 in 10): ../offload_mamba/make_cases.py's case NNN (blocks of 8-32, no
  unit) or ../offload_mamba_partial/make_cases.py's (a real hybrid's block of 32-80, the
  `prefix_match_unit` finer than it 8 times in 10), with ngram, eagle3 or mtp (`mmt`: run with
  `--mtp`), K 1-3, the legacy `disable_lookahead_block_hashes` a third of the EAGLE ones, the
  full-attention group flagged in `eagle_groups` two times in three (the draft's layers are
  attention layers: Qwen3-Next's MTP layer joins that group), and the pool grown by the K
  speculative blocks of each Mamba group and the full group's lookahead.
"""

import importlib.util
import json
import random
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent


def _load(name: str, folder: str):
    spec = importlib.util.spec_from_file_location(name, DATA / folder / "make_cases.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SPEC = _load("spec_cases", "offload_spec")
MAMBA = _load("mamba_cases", "offload_mamba")
PARTIAL = _load("partial_cases", "offload_mamba_partial")


def add_spec(cfg: dict, rng: random.Random, method: str) -> list[dict]:
    """K 1-3, an acceptance rate and a spec seed, drawn in this order, into ``cfg`` with
    ``method``, and its pool grown by the K speculative blocks of each Mamba group and the full
    group's lookahead; returns its groups. make_cases_mamba_flagged.py draws its own here."""
    k = rng.randint(1, 3)
    bs = cfg["block_size"]
    groups = cfg["groups"]
    nm = sum(g["type"] == "mamba" for g in groups)
    cfg.update(num_speculative_tokens=k, spec_acceptance_rate=rng.choice([0.3, 0.5, 0.7, 0.9]),
               spec_seed=rng.randrange(1000), spec_method=method)
    cfg["num_blocks"] += nm * k + -(-k // bs) + 1
    return groups


def make(seed: int) -> tuple[str, dict, list[dict]]:
    rng = random.Random(seed * 6007 + 11)
    if rng.random() < 0.4:
        cfg, reqs = SPEC.make(seed)
        cfg["spec_method"] = "mtp"      # (its request ids kept: the answers compare)
        return f"mtp{seed}", cfg, reqs
    cfg, reqs = (PARTIAL if rng.random() < 0.5 else MAMBA).make(seed)
    method = rng.choice(["ngram", "eagle3", "mtp"])
    groups = add_spec(cfg, rng, method)
    if method != "ngram":
        if rng.random() < 0.33:
            cfg["disable_lookahead_block_hashes"] = True
        full = [i for i, g in enumerate(groups) if g["type"] == "full"]
        if full and rng.random() < 0.67:
            cfg["eagle_groups"] = full
    return (f"mmt{seed}" if method == "mtp" else f"mm{seed}"), cfg, reqs


def write_cases(make_case, args: list[str]) -> None:
    """``make_case(seed)``'s trace for each seed in ARGS[1:], to ARGS[0]/NAME.trace.jsonl."""
    out = Path(args[0])
    out.mkdir(parents=True, exist_ok=True)
    for seed in map(int, args[1:]):
        name, cfg, reqs = make_case(seed)
        with open(out / f"{name}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)


def main() -> None:
    write_cases(make, sys.argv[1:])


if __name__ == "__main__":
    main()
