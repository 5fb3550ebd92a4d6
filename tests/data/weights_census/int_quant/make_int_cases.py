"""Write the AWQ / GPTQ census configs here (python make_int_cases.py, in this folder)."""
# ruff: noqa
import json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3]))
from kvcore.models.presets import PRESETS

# (the task's example: Llama-3.1-8B's published config as the preset types it, an AWQ
# checkpoint's quantization_config, float16 as AWQ checkpoints are)
LLAMA_8B = {**PRESETS["llama-3.1-8b"][1], "torch_dtype": "float16"}
FP8 = HERE.parent / "fp8"
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024,
         "intermediate_size": 2048, "num_hidden_layers": 2, "num_attention_heads": 8,
         "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 1024,
         "max_position_embeddings": 4096, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
         "torch_dtype": "float16", "tie_word_embeddings": False}
QWEN3 = {**LLAMA, "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
         "num_key_value_heads": 4, "torch_dtype": "bfloat16"}
QWEN3_MOE = {**QWEN3, "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
             "moe_intermediate_size": 1024, "num_experts": 4, "num_experts_per_tok": 2,
             "norm_topk_prob": True}
MIXTRAL = {**LLAMA, "architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
           "num_local_experts": 4, "num_experts_per_tok": 2, "torch_dtype": "bfloat16"}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}


def hybrid(name):
    cfg = json.loads((FP8 / f"{name}.config.json").read_text())
    cfg.pop("quantization_config")
    return cfg


CASES = {
    "llama-awq": (LLAMA, AWQ),
    "llama-3-1-8b-awq": (LLAMA_8B, AWQ),
    "llama-3-1-8b-gptq": (LLAMA_8B, GPTQ),
    "llama-awq-narrow": ({**LLAMA, "intermediate_size": 1536}, AWQ),
    "llama-awq-g64-lm-head": (LLAMA, {**AWQ, "group_size": 64, "lm_head": True}),
    "llama-awq-skip": (LLAMA, {**AWQ, "modules_to_not_convert": ["layers.1.mlp", "o_proj"]}),
    "llama-awq-skip-half-qkv": (LLAMA, {**AWQ, "modules_to_not_convert": ["q_proj"]}),
    "qwen3-moe-awq-skip": (QWEN3_MOE, {**AWQ, "modules_to_not_convert": [
        "mlp.gate", "layers.1.mlp.experts", "layers.0.self_attn"]}),
    "llama-awq-8bit": (LLAMA, {**AWQ, "bits": 8}),
    "llama-gptq": (LLAMA, GPTQ),
    "llama-gptq-8bit-channel": (LLAMA, {**GPTQ, "bits": 8, "group_size": -1}),
    "llama-gptq-desc-act": (LLAMA, {**GPTQ, "desc_act": True}),
    "llama-gptq-desc-act-channel": (LLAMA, {**GPTQ, "desc_act": True, "group_size": -1}),
    "llama-gptq-asym": (LLAMA, {**GPTQ, "sym": False}),
    "llama-gptq-narrow": ({**LLAMA, "intermediate_size": 1536}, GPTQ),
    "llama-gptq-g256": (LLAMA, {**GPTQ, "group_size": 256}),
    "qwen3-awq": (QWEN3, AWQ),
    "qwen3-gptq": (QWEN3, GPTQ),
    "qwen3-moe-awq": (QWEN3_MOE, AWQ),
    "qwen3-moe-gptq": (QWEN3_MOE, GPTQ),
    "mixtral-gptq-8bit": (MIXTRAL, {**GPTQ, "bits": 8}),
    "qwen3-5-text-awq": (hybrid("qwen3-5-text-fp8"), AWQ),
    "nemotron-h-gptq": (hybrid("nemotron-h-fp8"), GPTQ),
    "jamba-awq": (hybrid("jamba-fp8"), AWQ),
}

for name, (cfg, quant) in CASES.items():
    (HERE / f"{name}.config.json").write_text(
        json.dumps({**cfg, "quantization_config": quant}, indent=1) + "\n")
