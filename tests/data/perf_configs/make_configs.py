"""Random model configs for `oracle perf` (tests/data/perf_configs): architectures and config
keys the perf_cases / perf_fresh / perf_mla specs never drew.

    python tests/data/perf_configs/make_configs.py OUT_DIR SEED...

One spec per seed (NAME = cSEED-FAMILY): a synthetic config of one family below with random
widths (odd GQA ratios, MQA, head_dim other than hidden / heads, odd vocabularies, odd layer
counts), optional keys left out so the config class's defaults apply, sliding-window layer
patterns, MoE layouts (experts, top-k, shared experts, dense-first layers, interleaving), a
random model dtype, KV cache dtype, TP (dividing the heads) and, for MoE, expert parallelism;
then 8 steps of `tests/gen_perf_steps.py`'s kinds. Answer with
`oracle perf OUT_DIR/*.steps.jsonl --out-dir OUT_DIR`.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gen_perf_steps import step  # (tests/gen_perf_steps.py)

FAMILIES = {  # model_type: architecture
    "llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM", "qwen2_moe": "Qwen2MoeForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM", "mixtral": "MixtralForCausalLM",
    "phimoe": "PhiMoEForCausalLM", "olmoe": "OlmoeForCausalLM",
    "granitemoe": "GraniteMoeForCausalLM", "gemma2": "Gemma2ForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM", "cohere2": "Cohere2ForCausalLM",
    "gpt_oss": "GptOssForCausalLM", "deepseek_v3": "DeepseekV3ForCausalLM",
    "deepseek_v2": "DeepseekV2ForCausalLM", "glm4_moe": "Glm4MoeForCausalLM",
    "ernie4_5_moe": "Ernie4_5_MoeForCausalLM", "phi3": "Phi3ForCausalLM",
    "exaone4": "Exaone4ForCausalLM", "falcon": "FalconForCausalLM",
    "llama4_text": "Llama4ForCausalLM", "starcoder2": "Starcoder2ForCausalLM",
}
MOE = {"qwen2_moe", "qwen3_moe", "mixtral", "phimoe", "olmoe", "granitemoe", "gpt_oss",
       "deepseek_v3", "deepseek_v2", "glm4_moe", "ernie4_5_moe", "llama4_text"}
SLIDING = {"mistral", "qwen2", "qwen3", "mixtral", "phimoe", "gemma2", "gemma3_text",
           "cohere2", "gpt_oss", "phi3", "exaone4", "starcoder2"}


def attention(rng: random.Random, cfg: dict, fam: str) -> None:
    kv = rng.choice([1, 1, 2, 3, 4, 5, 6, 8])
    group = rng.choice([1, 2, 3, 4, 5, 7, 8])
    heads = kv * group
    head_dim = rng.choice([64, 80, 96, 128, 128, 256])
    hidden = heads * head_dim if rng.random() < 0.6 else rng.choice([1024, 2048, 3072, 4096])
    cfg.update(num_attention_heads=heads, hidden_size=hidden,
               num_hidden_layers=rng.choice([2, 5, 7, 12, 13, 24, 27, 32, 40, 61]))
    if hidden != heads * head_dim or rng.random() < 0.5:
        cfg["head_dim"] = head_dim
    if kv != heads or rng.random() < 0.7:
        cfg["num_key_value_heads"] = kv
    if fam == "falcon":
        cfg.pop("num_key_value_heads", None)
        cfg["new_decoder_architecture"] = rng.random() < 0.5
        cfg["multi_query"] = rng.random() < 0.5
        if cfg["new_decoder_architecture"] or rng.random() < 0.5:
            cfg["num_kv_heads"] = kv


def sliding(rng: random.Random, cfg: dict, fam: str) -> None:
    w = rng.choice([64, 128, 1000, 4096, 2047])
    n = cfg["num_hidden_layers"]
    if fam in ("qwen2", "qwen3"):
        cfg["use_sliding_window"] = rng.random() < 0.6
        cfg["sliding_window"] = w
        cfg["max_window_layers"] = rng.choice([n, n, 0, n // 2])
    elif fam in ("gemma3_text", "cohere2", "exaone4") and rng.random() < 0.5:
        cfg["sliding_window"] = w
        cfg["sliding_window_pattern"] = rng.choice([2, 3, 4, 6])
    elif rng.random() < 0.85:
        cfg["sliding_window"] = w if rng.random() < 0.9 else None
    if fam in ("gemma2", "gpt_oss", "gemma3_text", "cohere2", "exaone4") and rng.random() < 0.4:
        cfg["layer_types"] = [rng.choice(["sliding_attention", "full_attention"])
                              for _ in range(n)]


def moe(rng: random.Random, cfg: dict, fam: str) -> None:
    e = rng.choice([4, 8, 16, 60, 64, 128])
    k = rng.choice([1, 2, 4, 6, 8])
    k = min(k, e)
    mi = rng.choice([256, 512, 768, 1408])
    names = {"mixtral": "num_local_experts", "phimoe": "num_local_experts",
             "granitemoe": "num_local_experts", "gpt_oss": "num_local_experts",
             "llama4_text": "num_local_experts", "deepseek_v3": "n_routed_experts",
             "deepseek_v2": "n_routed_experts", "glm4_moe": "n_routed_experts",
             "ernie4_5_moe": "moe_num_experts"}
    cfg[names.get(fam, "num_experts")] = e
    cfg["moe_k" if fam == "ernie4_5_moe" else "num_experts_per_tok"] = k
    if fam in ("qwen2_moe", "qwen3_moe", "deepseek_v3", "deepseek_v2", "glm4_moe",
               "ernie4_5_moe", "olmoe") or rng.random() < 0.2:
        cfg["moe_intermediate_size"] = mi
    if fam in ("deepseek_v3", "deepseek_v2", "glm4_moe"):
        cfg["n_shared_experts"] = rng.choice([0, 1, 2])
        if rng.random() < 0.8:
            cfg["first_k_dense_replace"] = rng.choice([0, 1, 3])
        if rng.random() < 0.6:
            cfg["moe_layer_freq"] = rng.choice([1, 1, 2])
    if fam == "ernie4_5_moe":
        cfg["moe_num_shared_experts"] = rng.choice([0, 2])
    if fam == "qwen2_moe":
        cfg["shared_expert_intermediate_size"] = rng.choice([0, 2048])
    if fam in ("qwen2_moe", "qwen3_moe"):
        cfg["decoder_sparse_step"] = rng.choice([1, 1, 2])
        cfg["mlp_only_layers"] = rng.choice([[], [0], [0, 1]])
    if fam == "llama4_text":
        cfg["interleave_moe_layer_step"] = rng.choice([1, 2, 4])
        cfg["intermediate_size_mlp"] = rng.choice([2048, 4096])


def mla(rng: random.Random, cfg: dict, fam: str) -> None:
    if fam == "deepseek_v2" and rng.random() < 0.3:
        cfg["kv_lora_rank"] = None          # plain attention (DeepSeek-V2's first release)
        return
    cfg.update(kv_lora_rank=rng.choice([256, 512]), qk_nope_head_dim=rng.choice([64, 128]),
               qk_rope_head_dim=rng.choice([32, 64]), v_head_dim=rng.choice([64, 128]),
               q_lora_rank=rng.choice([None, 768, 1536]))


def config(rng: random.Random, fam: str) -> dict:
    cfg: dict = {"architectures": [FAMILIES[fam]], "model_type": fam,
                 "vocab_size": rng.choice([32000, 32001, 50257, 65536, 151936, 102400]),
                 "max_position_embeddings": rng.choice([4096, 32768, 131072]),
                 "torch_dtype": rng.choice(["bfloat16", "float16"])}
    attention(rng, cfg, fam)
    if rng.random() < 0.85:
        cfg["intermediate_size"] = rng.choice([1024, 2816, 5632, 8192, 14336])
    if rng.random() < 0.5:
        cfg["tie_word_embeddings"] = rng.random() < 0.5
    if fam in SLIDING:
        sliding(rng, cfg, fam)
    if fam in MOE:
        moe(rng, cfg, fam)
    if fam in ("deepseek_v3", "deepseek_v2"):
        mla(rng, cfg, fam)
    if fam == "llama4_text":
        n = cfg["num_hidden_layers"]
        cfg["attention_chunk_size"] = rng.choice([256, 8192])
        cfg["no_rope_layers"] = [int((i + 1) % 4 != 0) for i in range(n)]
    return cfg


def spec(seed: int) -> tuple[str, list[dict]]:
    rng = random.Random(seed)
    fam = sorted(FAMILIES)[seed % len(FAMILIES)]
    cfg = config(rng, fam)
    heads = cfg["num_attention_heads"]
    tp = rng.choice([t for t in (1, 1, 2, 4, 8) if heads % t == 0])
    head = {"name": f"c{seed}-{fam}", "model_config": cfg,
            "dtype": rng.choice(["bfloat16", "float16", "bfloat16", "float32"]),
            "kv_cache_dtype": rng.choice(["auto", "auto", "fp8", "fp8_e5m2", "fp8_e4m3"]),
            "tp": tp}
    if fam in MOE and rng.random() < 0.4:
        head["enable_expert_parallel"] = True
    steps = [step(rng, i) for i in range(8)]
    if cfg.get("sliding_window") or cfg.get("layer_types"):
        for s in steps:         # kvcli needs each decode's context under a window (no count)
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
