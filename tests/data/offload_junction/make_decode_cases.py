# ruff: noqa
"""Dev tool (not a test): traces aimed at oj278's finding (README.md here), a Mamba group's
state offered past the prompt: `offload_prompt_only` false and requests whose decode crosses a
chunk boundary past their prompt, over Mamba groups, with and without drafts.

    python3 tests/data/offload_junction/make_decode_cases.py OUT_DIR SEED...

Seed NNN (random.Random(NNN * 7717 + 5)) writes one trace of three kinds, by NNN % 3:
- 0: `odNNN` / `odtNNN` (mtp: answered with `--mtp`): make_cases.py's case NNN (EAGLE-family
  drafts, partial hash hits, the junction option on; answered with the option and `--off`);
- 1: `opNNN`: ../offload_mamba_partial/make_cases.py's case NNN (no drafts, the unit finer
  than the block 8 times in 10; answered by the patched sched_offload.py);
- 2: `omdNNN`: ../offload_mamba/make_cases.py's case NNN (no drafts, no unit; alike).
Then `offload_prompt_only` false, and three requests in four given the output that takes their
decode 1-5 tokens past the first chunk boundary after their prompt, where max_model_len (less
the speculative tokens and one) allows it.
"""

import importlib.util
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


JUNCTION = _load("junction_cases", HERE / "make_cases.py")
MORE = JUNCTION.MORE


def make(seed: int) -> tuple[str, dict, list[dict]]:
    rng = random.Random(seed * 7717 + 5)
    kind = seed % 3
    if kind == 0:
        name, cfg, reqs = JUNCTION.make(seed)
        name = name.replace("oj", "od", 1)
    elif kind == 1:
        cfg, reqs = MORE.PARTIAL.make(seed)
        name = f"op{seed}"
    else:
        cfg, reqs = MORE.MAMBA.make(seed)
        name = f"omd{seed}"
    cfg["offload_prompt_only"] = False
    chunk = cfg.get("offload_block_size", cfg["block_size"])
    room = cfg["max_model_len"] - cfg.get("num_speculative_tokens", 0) - 1
    for r in reqs:
        n = len(r["prompt_token_ids"])
        out = (n // chunk + 1) * chunk - n + rng.randint(1, 5)
        if rng.random() < 0.75 and n + out <= room:
            r["output_length"] = out
    return name, cfg, reqs


if __name__ == "__main__":
    MORE.write_cases(make, sys.argv[1:])
