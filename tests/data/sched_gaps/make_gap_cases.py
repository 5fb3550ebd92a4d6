"""Dev tool (not a test): random cases for the option combinations no other generator draws.

    python tests/data/sched_gaps/make_gap_cases.py BASE [--async] [--hybrid] [--knobs] \\
        [--cap] [--nochunk] [--retention] OUT_DIR SEED...

BASE is the generator whose draw a case starts from, unchanged (so its own seeds keep their
bytes): `sched` (`../sched_fresh/make_cases.py`: `--hybrid` adds its groups, `--async` its
follow-ups, `--knobs` its knob draw), `stress` (`../sched_stress/make_stress_cases.py`, with the
same three), `mamba` / `mamba2` (`../sched_mamba/make_random.py`, Jamba-style or Mamba2
groups; answered by `../oracle_mamba.py`), `offload` (`../offload_fresh/make_traces.py`, a CPU tier;
`--knobs` its knob draw) or `offhy` (`../offload_hybrid/make_cases.py`, a CPU tier over hybrid
groups, async as its seed draws it; `--knobs` the CPU-tier knob draw of `offload`, which no hybrid
CPU-tier case had: prefix caching off, full-sequence admission off, the adaptive threshold,
sha256_cbor; answered by the patched oracle, README there). Then, from a
generator of its own (seeded by the seed), each overlay:

* `--cap`: `max_model_len` stops decodes. No other case asks for more output than
  `max_model_len` leaves (every generator clamps `output_length` to it), so vLLM's
  `check_stop` length cap (`num_tokens >= max_model_len`) and the async scheduler's
  `max_model_len - num_computed_tokens - 1` bound on a step were never reached. About a third of
  the requests ask for 0-29 tokens past the cap, a fifth get a prompt within 1-40 tokens of
  `max_model_len` and a few tokens past it; the pool grows to hold one capped request.
* `--retention` (`offhy`): `prefix_cache_retention_interval` over a CPU tier, 0 or 1-16
  chunks (vLLM refuses other values there). The patched oracle built `CacheConfig` without it,
  so every hybrid CPU-tier case ran at the default 0; answered by a copy patched once more by
  `patch_oracle_retention.py`.
* `--nochunk` (a CPU tier): chunked prefill off (the budget raised to `max_model_len`, as vLLM
  requires), which `offload` never draws; a long-prefill threshold half the time.

Cases are named `g` + the base's letter (`s`, `x`, `m`, `m2`, `o`, `y`) + `k`/`c`/`n`/`r` per overlay + `a` under
async + `seedN`.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# the base generators, imported as they are (offload_hybrid's make_cases.py is loaded by file
# below: its name is sched_fresh's)
sys.path[:0] = [str(HERE.parent / d)
                for d in ("sched_fresh", "sched_stress", "sched_mamba", "offload_fresh")]
import make_cases as sched_base
import make_random as mamba_base
import make_stress_cases as stress_base
import make_traces as offload_base


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def load_offload_hybrid():
    """offload_hybrid/make_cases.py (sched_fresh's module of that name is on the path)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("offhy", HERE.parent / "offload_hybrid"
                                                  / "make_cases.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def add_cap(cfg: dict, reqs: list[dict], seed: int) -> None:
    """Ask some requests for more output than max_model_len leaves them (module docstring)."""
    rng = random.Random(seed * 1000003 + 17)
    mml, bs = cfg["max_model_len"], cfg["block_size"]
    for r in reqs:
        u = rng.random()
        p = r["prompt_token_ids"]
        if u < 0.35:
            r["output_length"] = max(1, mml - len(p) + rng.randrange(0, 30))
        elif u < 0.55:
            room = rng.choice([1, 2, bs - 1, bs, bs + 1, rng.randrange(1, 41)])
            want = max(len(p), mml - max(1, room))
            p.extend(rng.randrange(1, 30000) for _ in range(want - len(p)))
            r["output_length"] = max(1, mml - len(p) + rng.randrange(0, 20))
    # one capped request must fit the pool alone (above the watermark), or vLLM stalls
    need = cdiv(mml, bs) + 2
    w = cfg.get("watermark", 0.0)
    while cfg["num_blocks"] - 1 - int(w * cfg["num_blocks"]) < need:
        cfg["num_blocks"] += 1


def add_nochunk(cfg: dict, seed: int) -> None:
    """Chunked prefill off over a CPU tier (module docstring)."""
    rng = random.Random(seed * 1000033 + 29)
    cfg["enable_chunked_prefill"] = False
    cfg["max_num_batched_tokens"] = max(cfg["max_num_batched_tokens"], cfg["max_model_len"])
    if rng.random() < 0.5:
        cfg["long_prefill_token_threshold"] = rng.choice([1, 2, 4]) * cfg["block_size"]


def add_retention(cfg: dict, seed: int) -> None:
    """A retention interval over a CPU tier with a windowed group (module docstring): 0 or a
    multiple of the tier's chunk, the only values vLLM starts with."""
    if not any(g["type"] != "full" for g in cfg.get("groups", ())):
        return
    rng = random.Random(seed * 1000037 + 41)
    tpc = cfg.get("offload_block_size") or cfg["block_size"]
    cfg["prefix_cache_retention_interval"] = rng.choice([0, 1, 2, 2, 4, 8, 16]) * tpc


def draw(base: str, seed: int, asyn: bool, hybrid: bool, knobs: bool) -> tuple[dict, list]:
    """The base generator's case ``seed``, as that generator writes it."""
    if base == "sched":
        cfg, reqs = sched_base.make(seed, follow_ups=asyn)
        if hybrid:
            sched_base.add_groups(cfg, reqs, seed, asyn)
        if knobs:
            sched_base.add_knobs(cfg, seed)
    elif base == "offload":
        cfg, reqs = offload_base.make(seed)
        if knobs:
            offload_base.add_knobs(cfg, reqs, seed)
    elif base == "stress":
        cfg, reqs = stress_base.make(seed, asyn)
        if hybrid:
            sched_base.add_groups(cfg, reqs, seed, asyn)
        if knobs:
            sched_base.add_knobs(cfg, seed)
    elif base in ("mamba", "mamba2"):
        lines = mamba_base.trace(seed, ckpt=base == "mamba2", knobs=knobs)
        cfg = json.loads(lines[0])["config"]
        reqs = [json.loads(x) for x in lines[1:]]
    else:
        cfg, reqs = load_offload_hybrid().make(seed)
        if knobs:
            offload_base.add_knobs(cfg, reqs, seed)
    if asyn:
        cfg["async_scheduling"] = True
    return cfg, reqs


def main() -> None:
    flags = ("--async", "--hybrid", "--knobs", "--cap", "--nochunk", "--retention")
    args = sys.argv[1:]
    on = {f: f in args for f in flags}
    base, out, *seeds = [a for a in args if a not in flags]
    assert base in ("sched", "stress", "mamba", "mamba2", "offload", "offhy"), base
    for s in seeds:
        cfg, reqs = draw(base, int(s), on["--async"], on["--hybrid"], on["--knobs"])
        if on["--cap"]:
            add_cap(cfg, reqs, int(s))
        if on["--nochunk"]:
            add_nochunk(cfg, int(s))
        if on["--retention"]:
            add_retention(cfg, int(s))
        asyn = cfg.get("async_scheduling", False)
        name = ("g" + {"sched": "s", "stress": "x", "mamba": "m", "mamba2": "m2", "offload": "o",
                        "offhy": "y"}[base]
                + ("h" if on["--hybrid"] else "") + ("k" if on["--knobs"] else "")
                + ("c" if on["--cap"] else "") + ("n" if on["--nochunk"] else "") + ("r" if on["--retention"] else "")
                + ("a" if asyn else "") + "seed" + s)
        with open(f"{out}/{name}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)


if __name__ == "__main__":
    main()
