# ruff: noqa
"""Dev tool (not a test): the CPU tier over KV cache groups of several block sizes WITH
speculative decoding (and a prefix-match unit), for
../offload_spec_more/oracle_offload_spec_more.py run over a copy of the oracle tool patched by
../offload_hybrid/, ../offload_mamba/, ../offload_mamba_partial/, ../offload_mixed/ and
patch_oracle_mixed_spec.py here (README.md here).

    python3 tests/data/offload_mixed_spec/make_cases.py [--retention | --decode | --unit] \
        OUT_DIR SEED...

Case `oxsNNN` (`oxsrNNN` with `--retention`, `oxsdNNN` with `--decode`, `oxsuNNN` with
`--unit`; `oxm...` for mtp, run with `--mtp`) is ../offload_mixed/make_cases.py's case NNN with
the same flag (its layout, pool, tier, requests and retention, imported; `--unit` the plain
case) with drafts drawn by random.Random(NNN * 7919 + 5): method ngram, eagle3, eagle or mtp,
K 1-3, an acceptance rate and a spec seed (../offload_spec_more's `add_spec`, which also grows
the pool by the K speculative blocks of each Mamba group); the pool grown again by each
attention group's lookahead at its own block; for the EAGLE methods the legacy
`disable_lookahead_block_hashes` a third of the time and one full group flagged in
`eagle_groups` two times in three. With `--unit`, `prefix_match_unit` is half the groups' gcd
(a hash block finer than every block) and only layouts with a Mamba group (the partial copy's
rule) and no sliding window (kvcli refuses a unit beside one with the tier,
`kvcore.prefix_match.unmodelled`) are written.
"""

import importlib.util
import json
import math
import random
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent


def _load(name: str, folder: str):
    spec = importlib.util.spec_from_file_location(name, DATA / folder / "make_cases.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MIXED = _load("mixed_cases", "offload_mixed")
MORE = _load("more_cases", "offload_spec_more")


def make(seed: int, flag: str = "") -> tuple[str, dict, list[dict]]:
    cfg, reqs = MIXED.make(seed, flag == "--retention", flag == "--decode")
    sizes = [g.get("block_size", cfg["block_size"]) for g in cfg["groups"]]
    rng = random.Random(seed * 7919 + 5)
    method = rng.choice(["ngram", "eagle3", "eagle3", "eagle", "mtp"])
    groups = MORE.add_spec(cfg, rng, method)
    k = cfg["num_speculative_tokens"]
    bs = cfg["block_size"]
    cfg["num_blocks"] += sum(-(-k // g.get("block_size", bs)) + 1
                             for g in groups if g["type"] != "mamba")
    if method != "ngram":
        if rng.random() < 0.33:
            cfg["disable_lookahead_block_hashes"] = True
        full = [i for i, g in enumerate(groups) if g["type"] == "full"]
        if full and rng.random() < 0.67:
            cfg["eagle_groups"] = [rng.choice(full)]
    if flag == "--unit":
        types = {g["type"] for g in groups}
        if "mamba" not in types or "sliding_window" in types:
            return "", cfg, reqs
        cfg["prefix_match_unit"] = math.gcd(*sizes) // 2
    name = ("oxm" if method == "mtp" else "oxs") + flag[2:3]
    return f"{name}{seed}", cfg, reqs


if __name__ == "__main__":
    flag = sys.argv[1] if sys.argv[1] in ("--retention", "--decode", "--unit") else ""
    out, seeds = Path(sys.argv[1 + bool(flag)]), sys.argv[2 + bool(flag):]
    out.mkdir(parents=True, exist_ok=True)
    for s in seeds:
        name, cfg, reqs = make(int(s), flag)
        if not name:
            continue
        with open(out / f"{name}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)
