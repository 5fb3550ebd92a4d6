# ruff: noqa
"""Random configs for `oracle perf` of the families kvcli learned to size last (perf_families):
Gemma 3n / Gemma 4 (text and wrapper), the pre-Llama decoders (the 19 published configs of
tests/data/gpt_family), Mamba / Falcon-Mamba / Mamba2, LFM2 / LFM2-MoE and Nemotron-H with a
sliding window.

    python tests/data/perf_families/make_families.py OUT_DIR SEED...

One spec per seed (NAME = fSEED-FAMILY): a base config of the family (tests/data) with random
widths, layer counts, layer patterns, KV sharing, MoE blocks, model dtype, KV cache dtype and TP
(dividing the heads); then 8 steps of `tests/gen_perf_steps.py`'s kinds, every request with
count 1 (kvcli needs each decode's context where a window applies).
"""

from __future__ import annotations

import copy
import json
import random
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TESTS))

from gen_perf_steps import step  # (tests/gen_perf_steps.py)

DATA = TESTS / "data"
GPT = sorted((DATA / "gpt_family").glob("*.config.json"))
WIDTH_KEYS = {"gpt2": ("n_inner",), "gptj": ("n_inner",), "gpt_bigcode": ("n_inner",),
              "falcon": ("ffn_hidden_size",)}     # (the MLP width a config may leave out)
FAMILIES = ["gemma3n_text", "gemma3n", "gemma4_text", "gemma4", "gpt", "gpt", "gpt", "mamba",
            "falcon_mamba", "mamba2", "lfm2", "lfm2_moe", "nemotron_h"]


def load(rel: str) -> dict:
    return json.loads((DATA / rel).read_text())


def gemma(rng: random.Random, fam: str) -> dict:
    four = fam.startswith("gemma4")
    cfg = load("sched_gemma/gemma4_small.json" if four else "sched_gemma/gemma3n_small.json")
    for k in ("id2label", "label2id", "transformers_version", "_name_or_path"):
        cfg.pop(k, None)
    kv = rng.choice([1, 2, 4])
    heads = kv * rng.choice([1, 2, 4])
    cfg.update(num_attention_heads=heads, num_key_value_heads=kv,
               head_dim=rng.choice([128, 256]), hidden_size=rng.choice([1024, 2048, 2304]),
               vocab_size=rng.choice([262144, 262400, 32000]),
               sliding_window=rng.choice([48, 512, 1024]))
    period = rng.choice([2, 3, 5, 6])
    n = period * rng.choice([1, 2, 3, 5])
    cfg["num_hidden_layers"] = n
    cfg["layer_types"] = ["full_attention" if (i + 1) % period == 0 else "sliding_attention"
                          for i in range(n)]
    cfg["num_kv_shared_layers"] = rng.choice([0, 0, period, min(n - period, 2 * period)])
    if four:
        cfg["intermediate_size"] = rng.choice([4096, 9216, 12288])
        cfg.pop("per_layer_config", None)
        if rng.random() < 0.5:
            cfg["global_head_dim"] = rng.choice([256, 512])
        if rng.random() < 0.3:
            cfg["attention_k_eq_v"] = True
            cfg["num_global_key_value_heads"] = rng.choice([1, kv])
        cfg["use_double_wide_mlp"] = rng.random() < 0.3
        if rng.random() < 0.4:
            cfg.update(enable_moe_block=True, num_experts=rng.choice([8, 16, 128]),
                       top_k_experts=rng.choice([1, 2, 8]),
                       moe_intermediate_size=rng.choice([512, 704]))
        if rng.random() < 0.3:
            cfg["hidden_size_per_layer_input"] = 0
    else:
        width = rng.choice([8192, 16384])
        cfg["intermediate_size"] = [width] * n if rng.random() < 0.8 else width
        cfg["activation_sparsity_pattern"] = [rng.choice([0.95, 0.0]) for _ in range(n)]
        cfg["laurel_rank"] = rng.choice([32, 64])
    if fam in ("gemma3n", "gemma4"):        # the multimodal wrapper: the text under text_config
        text = dict(cfg, model_type=f"{fam}_text")
        text.pop("architectures", None)
        cfg = {"architectures": ["Gemma3nForConditionalGeneration" if fam == "gemma3n"
                                 else "Gemma4ForConditionalGeneration"],
               "model_type": fam, "text_config": text, "torch_dtype": cfg["torch_dtype"]}
    return cfg


def gpt(rng: random.Random) -> tuple[str, dict]:
    path = rng.choice(GPT)
    cfg = json.loads(path.read_text())
    for key in ("n_layer", "num_hidden_layers", "num_layers", "n_layers"):
        if key in cfg and rng.random() < 0.7:
            cfg[key] = rng.choice([2, 3, 7, 12, 24])
    hidden = next(cfg[k] for k in ("n_embd", "hidden_size", "n_embed", "d_model") if k in cfg)
    for key in ("n_inner", "ffn_dim", "ffn_hidden_size", "intermediate_size"):
        if (key in cfg or key in WIDTH_KEYS.get(cfg["model_type"], ())) and rng.random() < 0.5:
            cfg[key] = rng.choice([2 * hidden, 3 * hidden + 64, 4 * hidden])
    return path.name.split(".")[0], cfg


def ssm(rng: random.Random, fam: str) -> dict:
    base = {"mamba": "mamba_only/mamba-130m-style.config.json",
            "falcon_mamba": "mamba_only/falcon-mamba-7b-style.config.json",
            "mamba2": "mamba_only/mamba-codestral-7b-style.config.json"}[fam]
    cfg = load(base)
    cfg["num_hidden_layers"] = rng.choice([2, 3, 24, 64])
    if fam != "mamba2":
        cfg["hidden_size"] = rng.choice([768, 1024, 4096])
        if rng.random() < 0.5:
            cfg["intermediate_size"] = 2 * cfg["hidden_size"]
    return cfg


def lfm2(rng: random.Random, fam: str) -> dict:
    cfg = load("lfm2/lfm2-8b-a1b-style.config.json" if fam == "lfm2_moe"
               else "lfm2/lfm2-1.2b-style.config.json")
    n = rng.choice([4, 6, 10, 16])
    cfg["num_hidden_layers"] = n
    cfg["layer_types"] = [rng.choice(["conv", "conv", "full_attention"]) for _ in range(n)]
    if fam == "lfm2_moe":
        cfg["num_dense_layers"] = rng.choice([0, 1, 2])
        cfg["num_experts_per_tok"] = rng.choice([1, 2, 4])
    if rng.random() < 0.3:
        cfg.pop("intermediate_size", None)
    return cfg


def nemotron_h(rng: random.Random) -> dict:
    cfg = load("mamba/nemotron-h-window.census.json")["config"]
    pat = "".join(rng.choice("MM*-") for _ in range(rng.choice([4, 6, 8])))
    cfg.update(hybrid_override_pattern=pat, num_hidden_layers=len(pat),
               sliding_window=rng.choice([None, 64, 1000]))
    if cfg["sliding_window"] is None:
        del cfg["sliding_window"]
    return cfg


def spec(seed: int) -> tuple[str, list[dict]]:
    rng = random.Random(seed)
    fam = FAMILIES[seed % len(FAMILIES)]
    if fam.startswith("gemma"):
        cfg = gemma(rng, fam)
    elif fam == "gpt":
        fam, cfg = gpt(rng)
    elif fam in ("mamba", "falcon_mamba", "mamba2"):
        cfg = ssm(rng, fam)
    elif fam.startswith("lfm2"):
        cfg = lfm2(rng, fam)
    else:
        cfg = nemotron_h(rng)
    text = cfg.get("text_config", cfg)
    heads = next((text[k] for k in ("num_attention_heads", "n_head", "num_heads", "n_heads")
                  if k in text), 1)
    tp = rng.choice([t for t in (1, 1, 2, 4) if heads % t == 0])
    head = {"name": f"f{seed}-{fam}", "model_config": cfg,
            "dtype": rng.choice(["bfloat16", "float16", "bfloat16", "float32"]),
            "kv_cache_dtype": rng.choice(["auto", "auto", "fp8", "fp8_e5m2"]), "tp": tp}
    if fam in ("gemma3n", "gemma4"):    # (the oracle cannot inspect the wrapper: PERF.md)
        head["architectures"] = ["Gemma3nForCausalLM" if fam == "gemma3n"
                                 else "Gemma4ForCausalLM"]
    steps = [step(rng, i) for i in range(8)]
    for s in steps:
        s["requests"] = [dict(r, count=1) for r in s["requests"]]
    return head["name"], [head, *steps]


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for seed in map(int, sys.argv[2:]):
        name, lines = spec(seed)
        (out / f"{name}.steps.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


if __name__ == "__main__":
    main()
