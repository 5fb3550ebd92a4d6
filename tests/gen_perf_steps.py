"""Random engine-step batches for `oracle perf` (fresh parity fixtures, tests/data/perf_fresh).

    python tests/gen_perf_steps.py OUT_DIR [--seed N] [--mla]

`--mla` writes MLA_SPECS instead (tests/data/perf_mla: DeepSeek-V3, V2-Lite, Kimi-K2).

One spec per (preset, parallelism, KV dtype) below, 40 steps each: decode batches with mixed
contexts (some across the sliding windows), prefill chunks from 0 and after a hit, mixed steps,
1-token prefills, long contexts and an empty step. The model
configs are kvcore's presets, written into the spec, so the oracle parses what kvcore parses.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kvcore.models.presets import PRESETS

SPECS = [  # (name, preset, header extras)
    ("llama-3.1-8b", "llama-3.1-8b", {}),
    ("llama-3.1-70b-tp8", "llama-3.1-70b", {"tp": 8}),
    ("qwen3-8b-tp2-kvfp8", "qwen3-8b", {"tp": 2, "kv_cache_dtype": "fp8"}),
    ("mistral-7b-v0.3", "mistral-7b-v0.3", {}),
    ("mixtral-8x7b-tp4", "mixtral-8x7b", {"tp": 4}),
    ("mixtral-8x7b-tp4-ep", "mixtral-8x7b", {"tp": 4, "enable_expert_parallel": True}),
    ("gemma-3-27b-tp2", "gemma-3-27b", {"tp": 2, "architectures": ["Gemma3ForCausalLM"]}),
    ("gpt-oss-20b-counterfactual", "gpt-oss-20b", {"counterfactual_quant_method": "mxfp4"}),
    ("jamba-v0.1-tp2", "jamba-v0.1", {"tp": 2}),
]
# Multi-head latent attention (perf.py's `mla_attn` component). A name ending in .json is a
# config file here (Kimi-K2 has no preset); DeepSeek-V3 and Kimi-K2 keep their fp8
# quantization_config (perf.py bills their attention and FFN weights at 1 byte), the bf16 spec
# drops it.
MLA = Path(__file__).parent / "data" / "mla"
MLA_SPECS = [
    ("deepseek-v3-tp8", "deepseek-v3", {"tp": 8}),
    ("deepseek-v3-tp8-ep", "deepseek-v3", {"tp": 8, "enable_expert_parallel": True}),
    ("deepseek-v3-tp8-kvfp8", "deepseek-v3", {"tp": 8, "kv_cache_dtype": "fp8"}),
    ("deepseek-v3-bf16-tp16", "deepseek-v3", {"tp": 16, "drop_quantization": True}),
    ("deepseek-v2-lite", "deepseek-v2-lite", {}),
    ("deepseek-v2-lite-tp2-kvfp8", "deepseek-v2-lite", {"tp": 2, "kv_cache_dtype": "fp8"}),
    ("kimi-k2-tp16", str(MLA / "kimi-k2.config.json"), {"tp": 16}),
    ("kimi-k2-tp8-ep", str(MLA / "kimi-k2.config.json"), {"tp": 8,
                                                          "enable_expert_parallel": True}),
]


def step(rng: random.Random, i: int) -> dict:
    reqs = []
    kind = i % 8
    if kind in (0, 1):              # decodes, mixed contexts
        for _ in range(rng.randint(1, 12)):
            reqs.append({"num_tokens": 1, "num_computed_tokens": rng.choice(
                [rng.randint(1, 200), rng.randint(100, 5000), rng.randint(1000, 40000)]),
                "is_prefill": False, "count": rng.choice([1, 1, 3, 17])})
    elif kind == 2:                 # prefill chunks
        for _ in range(rng.randint(1, 3)):
            reqs.append({"num_tokens": rng.randint(2, 8192),
                         "num_computed_tokens": rng.choice([0, 0, rng.randint(1, 30000)]),
                         "is_prefill": True})
    elif kind in (3, 4):            # mixed
        reqs.append({"num_tokens": rng.randint(2, 4096),
                     "num_computed_tokens": rng.randint(0, 20000), "is_prefill": True})
        reqs.append({"num_tokens": 1, "num_computed_tokens": rng.randint(1, 20000),
                     "is_prefill": False, "count": rng.randint(1, 100)})
    elif kind == 5:                 # a 1-token prefill (new request after a hit), a chunk's last
        reqs.append({"num_tokens": 1, "num_computed_tokens": rng.randint(0, 9000),
                     "is_prefill": True})
        reqs.append({"num_tokens": rng.randint(2, 9), "num_computed_tokens": rng.randint(1, 99),
                     "is_prefill": True})
    elif kind == 6:                 # long contexts; prefills first (vLLM's SchedulerOutput
        # order: the oracle's self-check compares it with the input order)
        reqs.append({"num_tokens": rng.randint(4000, 8192),
                     "num_computed_tokens": rng.randint(20000, 60000), "is_prefill": True})
        reqs.append({"num_tokens": 1, "num_computed_tokens": rng.randint(60000, 100000),
                     "is_prefill": False, "count": rng.randint(16, 64)})
    else:                           # empty or tiny
        if rng.random() < 0.5:
            reqs.append({"num_tokens": 1, "num_computed_tokens": 1, "is_prefill": False})
    return {"label": f"random {i} ({kind})", "requests": reqs}


def main() -> None:
    out = Path(sys.argv[1])
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 15
    mla = "--mla" in sys.argv
    out.mkdir(parents=True, exist_ok=True)
    for n, (name, preset, extra) in enumerate(MLA_SPECS if mla else SPECS):
        rng = random.Random(seed * 1000 + n + (100 if mla else 0))
        extra = dict(extra)
        cfg = (json.loads(Path(preset).read_text()) if preset.endswith(".json")
               else dict(PRESETS[preset][1]))
        if extra.pop("drop_quantization", False):
            cfg.pop("quantization_config", None)
        head = {"name": name, "model_config": cfg, "dtype": "bfloat16",
                "kv_cache_dtype": "auto", "tp": 1, **extra}
        lines = [head] + [step(rng, i) for i in range(40)]
        (out / f"{name}.steps.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


if __name__ == "__main__":
    main()
