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
# (experts 768 wide: 192 a rank at TP 4, 96 at TP 8, not whole groups of 128: Marlin's MoE
# method cannot take them and vLLM falls back to MoeWNA16, whose groups halve to fit)
QWEN3_MOE_NARROW = {**QWEN3_MOE, "moe_intermediate_size": 768, "num_experts": 8}
MIXTRAL = {**LLAMA, "architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
           "num_local_experts": 4, "num_experts_per_tok": 2, "torch_dtype": "bfloat16"}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}



def ct(fmt, weights, inputs=None, ignore=("lm_head",)):
    """A compressed-tensors quantization_config as llm-compressor writes it: one group, every
    Linear."""
    return {"quant_method": "compressed-tensors", "format": fmt, "quantization_status":
            "compressed", "ignore": list(ignore), "config_groups": {"group_0": {
                "targets": ["Linear"], "weights": {"symmetric": True, "dynamic": False,
                                                   "actorder": None, **weights},
                "input_activations": inputs, "output_activations": None}}}


W4A16 = ct("pack-quantized", {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128})
W8A16 = ct("pack-quantized", {"num_bits": 8, "type": "int", "strategy": "channel"})
W8A8_INT8 = ct("int-quantized", {"num_bits": 8, "type": "int", "strategy": "channel"},
               {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True,
                "symmetric": True})
W8A8_INT8_STATIC = ct("int-quantized", {"num_bits": 8, "type": "int", "strategy": "tensor"},
                      {"num_bits": 8, "type": "int", "strategy": "tensor", "dynamic": False,
                       "symmetric": False})
FP8_DYNAMIC = ct("float-quantized", {"num_bits": 8, "type": "float", "strategy": "channel"},
                 {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True,
                  "symmetric": True})
FP8_STATIC = ct("float-quantized", {"num_bits": 8, "type": "float", "strategy": "tensor"},
                {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False,
                 "symmetric": True})


# (DeepSeek-V3's config, tiny: 2 layers, the first dense (first_k_dense_replace 1), 8 routed
# experts 512 wide (64 a rank at TP 8: not whole groups), one shared expert; the MLA widths
# chosen so o_proj's input shard (8 heads x 64) is 64 at TP 8; DeepSeek-V2-Lite's shape without
# q_lora_rank)
DSV3 = {**json.loads((HERE.parents[1] / "mla" / "deepseek-v3.config.json").read_text()),
        "hidden_size": 1024, "intermediate_size": 2048, "num_hidden_layers": 2,
        "first_k_dense_replace": 1, "num_attention_heads": 8, "num_key_value_heads": 8,
        "q_lora_rank": 384, "kv_lora_rank": 256, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32,
        "v_head_dim": 64, "moe_intermediate_size": 512, "n_routed_experts": 8,
        "num_experts_per_tok": 2, "n_group": 2, "topk_group": 1, "vocab_size": 1024}
DSV3.pop("quantization_config")
DSV2_LITE = {**DSV3, "q_lora_rank": None}
# (the task's example: DeepSeek-V3's published config, float16 as AWQ checkpoints are)
DSV3_FULL = {**json.loads((HERE.parents[1] / "mla" / "deepseek-v3.config.json").read_text()),
             "torch_dtype": "float16"}
DSV3_FULL.pop("quantization_config")
QWEN3_MOE_WIDE = {**QWEN3_MOE, "moe_intermediate_size": 2048, "num_experts": 8}


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
    "qwen3-moe-awq-narrow": (QWEN3_MOE_NARROW, AWQ),
    "qwen3-moe-gptq-narrow": (QWEN3_MOE_NARROW, GPTQ),
    "mixtral-gptq-8bit": (MIXTRAL, {**GPTQ, "bits": 8}),
    "qwen3-5-text-awq": (hybrid("qwen3-5-text-fp8"), AWQ),
    "nemotron-h-gptq": (hybrid("nemotron-h-fp8"), GPTQ),
    "jamba-awq": (hybrid("jamba-fp8"), AWQ),
    "llama-ct-w4a16": (LLAMA, W4A16),
    "llama-ct-w4a16-asym": (LLAMA, {**W4A16, "config_groups": {"group_0": {
        **W4A16["config_groups"]["group_0"], "weights": {
            **W4A16["config_groups"]["group_0"]["weights"], "symmetric": False}}}}),
    "llama-ct-w4a16-narrow": ({**LLAMA, "intermediate_size": 1536}, W4A16),
    "llama-ct-w4a16-ignore": (LLAMA, {**W4A16, "ignore": [
        "lm_head", "re:.*layers[.]1[.]mlp.*", "model.layers.0.self_attn.o_proj"]}),
    "llama-ct-w8a16": (LLAMA, W8A16),
    "llama-ct-w8a8-int8": (LLAMA, W8A8_INT8),
    "llama-ct-w8a8-int8-static": (LLAMA, W8A8_INT8_STATIC),
    "llama-ct-fp8-dynamic": (LLAMA, FP8_DYNAMIC),
    "llama-ct-fp8-static": (LLAMA, FP8_STATIC),
    "llama-3-1-8b-ct-w4a16": (LLAMA_8B, W4A16),
    "qwen3-moe-ct-fp8-dynamic": (QWEN3_MOE, {**FP8_DYNAMIC, "ignore": ["lm_head", "re:.*mlp.gate$"]}),
    "qwen3-5-text-ct-w4a16": (hybrid("qwen3-5-text-fp8"), W4A16),
    # (the checkpoint's spelling, model.language_model.layers.N: vLLM renames it first)
    "qwen3-5-text-awq-skip-hf-names": (hybrid("qwen3-5-text-fp8"), {
        **AWQ, "modules_to_not_convert": ["model.language_model.layers.1.mlp", "linear_attn"]}),
    "qwen3-5-text-ct-w4a16-ignore-hf-names": (hybrid("qwen3-5-text-fp8"), {**W4A16, "ignore": [
        "lm_head", "model.language_model.layers.3.self_attn.qkv_proj",
        "model.language_model.layers.0.linear_attn.out_proj"]}),
    "jamba-ct-fp8-dynamic": (hybrid("jamba-fp8"), FP8_DYNAMIC),
    "nemotron-h-ct-w8a8-int8": (hybrid("nemotron-h-fp8"), W8A8_INT8),
    "deepseek-v3-awq": (DSV3, AWQ),
    "deepseek-v3-671b-awq": (DSV3_FULL, AWQ),
    "deepseek-v3-gptq": (DSV3, GPTQ),
    "deepseek-v3-ct-w4a16": (DSV3, W4A16),
    "deepseek-v3-ct-w8a8-int8": (DSV3, W8A8_INT8),
    "deepseek-v3-ct-fp8-dynamic": (DSV3, FP8_DYNAMIC),
    "deepseek-v2-lite-awq": (DSV2_LITE, AWQ),
    "deepseek-v2-lite-ct-w4a16": (DSV2_LITE, W4A16),
    "qwen3-moe-ct-w4a16": (QWEN3_MOE_WIDE, W4A16),
    "qwen3-moe-ct-w8a8-int8": (QWEN3_MOE_WIDE, W8A8_INT8),
    "mixtral-ct-w4a16": (MIXTRAL, W4A16),
    "qwen3-moe-ct-w4a16-narrow": (QWEN3_MOE_NARROW, W4A16),
    "qwen3-moe-ct-w8a8-int8-static": (QWEN3_MOE_WIDE, W8A8_INT8_STATIC),
}

for name, (cfg, quant) in CASES.items():
    (HERE / f"{name}.config.json").write_text(
        json.dumps({**cfg, "quantization_config": quant}, indent=1) + "\n")
