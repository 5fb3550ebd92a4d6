"""Write the census configs here (python make_rules_cases.py, in this folder): bitsandbytes
checkpoints, and GPTQ's per-module rules (``dynamic``, ``modules_in_block_to_quantize``)."""
# ruff: noqa
import importlib.util, json
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "make_int_cases", HERE.parent / "int_quant" / "make_int_cases.py")
mic = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mic)         # (it rewrites int_quant/'s configs, unchanged)
LLAMA, LLAMA_8B, QWEN3_MOE, GPTQ = mic.LLAMA, mic.LLAMA_8B, mic.QWEN3_MOE, mic.GPTQ

# bitsandbytes as transformers' BitsAndBytesConfig.to_dict() writes it into config.json
BNB = {"quant_method": "bitsandbytes", "_load_in_4bit": True, "_load_in_8bit": False,
       "load_in_4bit": True, "load_in_8bit": False, "bnb_4bit_quant_type": "nf4",
       "bnb_4bit_use_double_quant": True, "bnb_4bit_compute_dtype": "bfloat16",
       "bnb_4bit_quant_storage": "uint8", "llm_int8_threshold": 6.0,
       "llm_int8_skip_modules": None, "llm_int8_has_fp16_weight": False,
       "llm_int8_enable_fp32_cpu_offload": False}
BNB_8BIT = {**BNB, "_load_in_4bit": False, "_load_in_8bit": True, "load_in_4bit": False,
            "load_in_8bit": True}
BNB_FP4_SKIP = {**BNB, "bnb_4bit_quant_type": "fp4", "bnb_4bit_use_double_quant": False,
                "llm_int8_skip_modules": ["lm_head", "o_proj"]}


def gptq(**kw):
    return {**GPTQ, **kw}


CASES = {
    "llama-3-1-8b-bnb-nf4": (LLAMA_8B, BNB),
    "llama-3-1-8b-bnb-8bit": (LLAMA_8B, BNB_8BIT),
    "llama-bnb-fp4-skip": (LLAMA, BNB_FP4_SKIP),
    # dynamic: "-:" skips (re.match on vLLM's module path), "+:" (or no sign) overrides
    # bits / group_size / sym / desc_act; the first rule matching a path decides
    "llama-gptq-dynamic-skip": (LLAMA, gptq(dynamic={r"-:.*layers\.1\.mlp\..*": {}})),
    "llama-gptq-dynamic-mixed": (LLAMA, gptq(lm_head=True, dynamic={
        r"+:model\.layers\.0\..*": {"bits": 8, "group_size": 64},
        r"-:.*self_attn\.o_proj": {},
        r".*down_proj": {"group_size": -1},
        r"+:lm_head": {"bits": 8}})),
    "llama-gptq-dynamic-asym": (LLAMA, gptq(dynamic={r"+:.*mlp.*": {"sym": False}})),
    "llama-gptq-dynamic-g256": (LLAMA, gptq(dynamic={r"+:.*mlp.*": {"group_size": 256}})),
    "llama-gptq-dynamic-desc-act": (LLAMA, gptq(dynamic={r"+:.*mlp.*": {"desc_act": True}})),
    "qwen3-moe-gptq-dynamic": (QWEN3_MOE, gptq(dynamic={
        r"-:.*layers\.1\.mlp\.experts": {}, r"+:.*layers\.0\.mlp\.experts": {"bits": 8},
        r"-:.*mlp\.gate$": {}})),
    # modules_in_block_to_quantize: substrings of vLLM's path (a list of lists is flattened),
    # a fused linear's shards all or none; the rest, an LM head too, unquantised
    "llama-gptq-blocks": (LLAMA, gptq(lm_head=True, modules_in_block_to_quantize=[
        ["self_attn.k_proj", "self_attn.v_proj", "self_attn.q_proj"], ["mlp.down_proj"]])),
    "llama-gptq-blocks-half-qkv": (LLAMA, gptq(modules_in_block_to_quantize=[
        "self_attn.q_proj", "mlp.gate_proj", "mlp.up_proj"])),
    "qwen3-moe-gptq-blocks": (QWEN3_MOE, gptq(modules_in_block_to_quantize=[
        "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"])),
    # (experts Marlin cannot take fall back to MoeWNA16 with the config's settings: no rule)
    "qwen3-moe-gptq-narrow-dynamic": (mic.QWEN3_MOE_NARROW, gptq(dynamic={
        r"-:.*layers\.1\.mlp\.experts": {}, r"+:.*layers\.0\..*": {"bits": 8}})),
    # (MLA's fused_qkv_a_proj of q_a_proj and kv_a_proj_with_mqa; a shared expert's linears)
    "deepseek-v3-gptq-blocks": (mic.DSV3, gptq(modules_in_block_to_quantize=[
        "q_a_proj", "kv_a_proj_with_mqa", "kv_b_proj", "shared_experts.down_proj"])),
    "deepseek-v3-gptq-dynamic": (mic.DSV3, gptq(dynamic={
        r"-:.*fused_qkv_a_proj": {}, r"+:.*shared_experts.*": {"bits": 8, "group_size": 32}})),
    # (Qwen3.5's checkpoint names: vLLM renames the block list, not the dynamic regexes)
    "qwen3-5-text-gptq-blocks-hf-names": (mic.hybrid("qwen3-5-text-fp8"), gptq(
        modules_in_block_to_quantize=["model.language_model.layers.0.linear_attn",
                                      "model.language_model.layers.3.self_attn", "mlp"])),
    "qwen3-5-text-gptq-dynamic": (mic.hybrid("qwen3-5-text-fp8"), gptq(dynamic={
        r"-:.*linear_attn\.in_proj_qkvz": {}, r"+:.*layers\.3\..*": {"bits": 8}})),
    # (the task's examples: Llama-3.1-8B with a GPTQModel-style mixed config, and one whose
    # blocks leave o_proj and the MLP's gate/up in float16)
    "llama-3-1-8b-gptq-dynamic": (LLAMA_8B, gptq(dynamic={
        r"+:.*layers\.(?:[0-9]|1[0-5])\..*": {"bits": 8},
        r"-:.*layers\.31\..*": {}})),
    "llama-3-1-8b-gptq-blocks": (LLAMA_8B, gptq(modules_in_block_to_quantize=[
        ["self_attn.k_proj", "self_attn.v_proj", "self_attn.q_proj"], ["mlp.down_proj"]])),
}

for name, (cfg, quant) in CASES.items():
    (HERE / f"{name}.config.json").write_text(
        json.dumps({**cfg, "quantization_config": quant}, indent=1) + "\n")
