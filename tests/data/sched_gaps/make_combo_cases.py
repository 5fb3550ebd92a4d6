"""Dev tool (not a test): the newest CPU-tier features in combination, each base generator's
draw unchanged, overlays from seeded generators of this file's own (README.md here).

    python3 tests/data/sched_gaps/make_combo_cases.py BASE [--async] [--knobs] [--cap] \\
        [--lora] [--twins] [--retention] OUT_DIR SEED...

BASE (no existing generator is edited, so every kept fixture redraws byte for byte):

  dense   `../offload_hybrid/make_dense.make`: dense retention over windowed groups (`d`)
  dmamba  `make_dense.make_mamba`: the same beside an align-mode Mamba group (`e`)
  mpart   `../offload_mamba_partial/make_cases.make`: a real hybrid's Mamba layout, the
          `prefix_match_unit` finer than the block (partial tails) eight times in ten (`p`)
  alone   `../offload_hybrid/make_alone.make`: one windowed group alone (`w`)
  offhy   `../offload_hybrid/make_cases.make`: full + sliding / chunked-local groups (`y`)

Overlays, in this order:

* `--knobs`: `../offload_fresh/make_traces.add_knobs` (priorities, watermark, full-sequence
  admission off, max_num_active_seqs, the adaptive long-prefill threshold, prefix caching off,
  sha256_cbor), seeded as there.
* `--retention`: a positive interval (1, 2 or 4 tier chunks; vLLM starts only with a chunk
  multiple) where a sliding-window or Mamba group exists, which `make_dense.py` never draws and
  `offhy` had only without LoRA.
* `--cap`: `make_gap_cases.add_cap` (`max_model_len` stops decodes), then the pool grown until
  one capped request fits over every group above the watermark (`add_cap` counts one group).
* `--lora`: `../offload_lora/make_lora_offload.overlay` (adapters and salts; the tier shrunk),
  and with `--twins` its twins (one prompt in two domains in the same steps).
* `--async`: async scheduling on (the bases draw it half the time).

Cases are named `g` + the base's letter + `k`/`r`/`c`/`l`/`t` per overlay + `a` under async +
`seedN`, as `make_gap_cases.py` names its own (`test_replay_gap_cases.py` reads the letters).
All are answered by one oracle copy: the hybrid, Mamba, partial-tail and LoRA patches applied in
that order (README.md here).
"""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent


def _load(name: str, path: Path):
    """A generator loaded by file (three of them are named make_cases.py)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# make_gap_cases.py (for add_cap) imports sched_fresh's make_cases by name; make_lora_offload
# and make_dense import offload_hybrid's by the same name: the first dropped once loaded
gaps = _load("combo_gaps", HERE / "make_gap_cases.py")
del sys.modules["make_cases"]
sys.path[:0] = [str(DATA / "offload_hybrid"), str(DATA / "offload_fresh")]
import make_cases as hybrid_base  # offload_hybrid's
import make_dense as dense_base
import make_traces as offload_base

alone_base = _load("combo_alone", DATA / "offload_hybrid" / "make_alone.py")
partial_base = _load("combo_partial", DATA / "offload_mamba_partial" / "make_cases.py")
lora = _load("combo_lora", DATA / "offload_lora" / "make_lora_offload.py")

BASES = {"dense": ("d", dense_base.make), "dmamba": ("e", dense_base.make_mamba),
         "mpart": ("p", partial_base.make), "alone": ("w", alone_base.make),
         "offhy": ("y", hybrid_base.make)}
FLAGS = ("--async", "--knobs", "--cap", "--lora", "--twins", "--retention")


def add_retention(cfg: dict, seed: int) -> None:
    """A positive interval, 1, 2 or 4 chunks, where some group is windowed but not chunked
    local (else vLLM refuses any positive interval, and kvcli alike: nothing to compare)."""
    if not any(g["type"] in ("sliding_window", "mamba") for g in cfg["groups"]):
        return
    rng = random.Random(seed * 1000039 + 43)
    tpc = cfg.get("offload_block_size") or cfg["block_size"]
    cfg["prefix_cache_retention_interval"] = rng.choice([1, 2, 2, 4]) * tpc


def grow_for_cap(cfg: dict) -> None:
    """One max_model_len request must fit the pool over every group, above the watermark."""
    bs, mml, groups = cfg["block_size"], cfg["max_model_len"], cfg["groups"]
    attention = [g for g in groups if g["type"] != "mamba"]
    mambas = len(groups) - len(attention)
    need = (hybrid_base.needed_blocks(attention, mml, bs, 2 * cfg["max_num_batched_tokens"])
            + 3 * mambas + 2 * len(groups))
    w = cfg.get("watermark", 0.0)
    while cfg["num_blocks"] - 1 - int(w * cfg["num_blocks"]) < need:
        cfg["num_blocks"] += 1


def make(base: str, seed: int, on: dict[str, bool]) -> tuple[str, dict, list[dict]]:
    letter, draw = BASES[base]
    cfg, reqs = draw(seed)
    name = "g" + letter
    if on["--knobs"]:
        offload_base.add_knobs(cfg, reqs, seed)
        name += "k"
    if on["--retention"]:
        add_retention(cfg, seed)
        name += "r"
    if on["--cap"]:
        gaps.add_cap(cfg, reqs, seed)
        grow_for_cap(cfg)
        name += "c"
    if on["--lora"]:
        lora.overlay(cfg, reqs, seed)
        name += "l"
        if on["--twins"]:
            reqs = lora.twins(reqs, seed)
            name += "t"
    if on["--async"]:
        cfg["async_scheduling"] = True
    return name + ("a" if cfg.get("async_scheduling") else "") + f"seed{seed}", cfg, reqs


def main() -> None:
    args = sys.argv[1:]
    on = {f: f in args for f in FLAGS}
    base, out, *seeds = [a for a in args if a not in FLAGS]
    assert base in BASES, base
    Path(out).mkdir(parents=True, exist_ok=True)
    for s in seeds:
        name, cfg, reqs = make(base, int(s), on)
        with open(f"{out}/{name}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)


if __name__ == "__main__":
    main()
