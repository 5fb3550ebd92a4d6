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



def ct_groups(*groups, ignore=("lm_head",)):
    """A compressed-tensors quantization_config with several config groups, each (targets,
    one of make_int_cases' schemes), its format the group's own, as llm-compressor writes a
    mixed-precision checkpoint."""
    out = {f"group_{i}": {**scheme["config_groups"]["group_0"], "targets": list(targets),
                          "format": scheme["format"]}
           for i, (targets, scheme) in enumerate(groups)}
    return {**mic.W4A16, "format": "mixed-precision", "ignore": list(ignore),
            "config_groups": out}


ATTN = [r"re:.*self_attn\..*"]
QKV0 = ["model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj",
        "model.layers.0.self_attn.v_proj"]
CASES.update({
    # compressed-tensors with several config groups: attention W8A8 int8, the rest W4A16
    "llama-ct-groups": (LLAMA, ct_groups((ATTN, mic.W8A8_INT8), (["Linear"], mic.W4A16))),
    # (layer 0's qkv_proj by its shards' exact names, fp8; o_proj left to "Linear")
    "llama-ct-groups-shards": (LLAMA, ct_groups((QKV0, mic.FP8_DYNAMIC),
                                                (["Linear"], mic.W8A16))),
    # (q_proj in one group, k/v_proj in another: the fused linear takes its first shard's)
    "llama-ct-groups-split-qkv": (LLAMA, ct_groups((QKV0[:1], mic.W8A8_INT8),
                                                   (QKV0[1:], mic.W4A16),
                                                   (["Linear"], mic.W8A16))),
    # (no "Linear": what no group targets stays float16; a lone Attention group is dropped)
    "llama-ct-groups-mlp-only": (LLAMA, ct_groups(([r"re:.*mlp\.down_proj$"], mic.W4A16),
                                                  (["LlamaAttention"], mic.FP8_DYNAMIC))),
    "qwen3-moe-ct-groups": (mic.QWEN3_MOE_WIDE, ct_groups(
        ([r"re:.*mlp\.experts.*"], mic.FP8_DYNAMIC), (["Linear"], mic.W4A16),
        ignore=("lm_head", r"re:.*mlp\.gate$"))),
    # (the routed experts when no group names them: "Linear"'s scheme)
    "qwen3-moe-ct-groups-linear-experts": (mic.QWEN3_MOE_WIDE, ct_groups(
        (ATTN, mic.FP8_DYNAMIC), (["Linear"], mic.W8A8_INT8),
        ignore=("lm_head", r"re:.*mlp\.gate$"))),
    # (an ignore entry naming the experts' module exactly: vLLM matches the list against
    # each expert's projections, model.layers.1.mlp.experts.0.gate_proj)
    "qwen3-moe-ct-ignore-experts-exact": (mic.QWEN3_MOE_WIDE, {**mic.FP8_DYNAMIC, "ignore": [
        "lm_head", r"re:.*mlp\.gate$", "model.layers.1.mlp.experts"]}),
    "qwen3-moe-ct-ignore-experts-re": (mic.QWEN3_MOE_WIDE, {**mic.FP8_DYNAMIC, "ignore": [
        "lm_head", r"re:.*mlp\.gate$", r"re:.*layers\.1\.mlp\.experts.*"]}),
    # (the experts' down_proj in one group, gate/up_proj in "Linear"'s: refused)
    "qwen3-moe-ct-groups-experts-split": (mic.QWEN3_MOE_WIDE, ct_groups(
        ([r"re:.*experts.*down_proj"], mic.W8A8_INT8), (["Linear"], mic.FP8_DYNAMIC),
        ignore=("lm_head", r"re:.*mlp\.gate$"))),
    # (the experts int8 with static inputs by a regex group: refused, as with one group)
    "qwen3-moe-ct-groups-int8-static-experts": (mic.QWEN3_MOE_WIDE, ct_groups(
        ([r"re:.*experts.*"], mic.W8A8_INT8_STATIC), (["Linear"], mic.W4A16),
        ignore=("lm_head", r"re:.*mlp\.gate$"))),
    # (a catch-all regex reaches the embedding and the LM head: vLLM packs them too; kvcli
    # does not model it and counts the checkpoint unquantised, with its warning)
    "llama-ct-groups-re-all": (LLAMA, ct_groups((ATTN, mic.W8A8_INT8), (["re:.*"], mic.W4A16),
                                                ignore=())),
    "llama-3-1-8b-ct-groups": (LLAMA_8B, ct_groups((ATTN, mic.W8A8_INT8),
                                                   (["Linear"], mic.W4A16))),
})
# compressed-tensors targets reaching the embedding or the LM head (vLLM packs them:
# CompressedTensorsEmbeddingWNA16Int, the LM head's own scheme), and class-name targets (vLLM
# matches a target contained in the module's class name, any case: "Linear" in
# QKVParallelLinear, RowParallelLinear, GateLinear; a decoder layer's class in none)
W4A16_ALL = ["Linear", "re:.*embed_tokens", "lm_head"]
CASES.update({
    "llama-ct-embed-head": (LLAMA, ct_groups((W4A16_ALL, mic.W4A16), ignore=())),
    "llama-ct-embed-channel": (LLAMA, ct_groups((["Linear", "model.embed_tokens"], mic.W8A16))),
    "llama-ct-embed-int8": (LLAMA, ct_groups((["Linear", "re:.*embed_tokens"],
                                              mic.W8A8_INT8))),
    "llama-ct-head-int8": (LLAMA, ct_groups((["Linear", "lm_head"], mic.W8A8_INT8), ignore=())),
    "llama-ct-head-ignored": (LLAMA, ct_groups((W4A16_ALL, mic.W4A16))),
    "llama-ct-embed-tied": ({**LLAMA, "tie_word_embeddings": True}, ct_groups(
        (["Linear", "re:.*embed_tokens"], mic.W4A16), ignore=())),
    "llama-ct-class-qkv": (LLAMA, ct_groups((["QKVParallelLinear"], mic.W4A16))),
    "llama-ct-class-row": (LLAMA, ct_groups((["RowParallelLinear"], mic.W8A8_INT8),
                                            (["Linear"], mic.W4A16))),
    "llama-ct-class-parallel": (LLAMA, ct_groups((["ParallelLinear"], mic.W4A16))),
    "llama-ct-class-lower": (LLAMA, ct_groups((["linear"], mic.W4A16))),
    "llama-ct-class-decoder": (LLAMA, ct_groups((["LlamaDecoderLayer"], mic.W4A16))),
    "llama-ct-class-embedding": (LLAMA, ct_groups((["Linear", "Embedding"], mic.W4A16))),
    "llama-ct-class-embedding-int8": (LLAMA, ct_groups((["Linear", "Embedding"],
                                                        mic.W8A8_INT8))),
    "llama-ct-class-lm-head": (LLAMA, ct_groups((["Linear", "ParallelLMHead"], mic.W4A16),
                                                ignore=())),
    "qwen3-moe-ct-class-parallel": (mic.QWEN3_MOE_WIDE, ct_groups((["ParallelLinear"],
                                                                   mic.W4A16))),
    # (qwen3_moe.py names its embedding model.embed_tokens; llama.py gives it no prefix, so
    # only a class name or a regex matching "" reaches Llama's)
    "qwen3-moe-ct-embed-head": (mic.QWEN3_MOE_WIDE, ct_groups(
        (["Linear", "model.embed_tokens", "lm_head"], mic.W4A16), ignore=(r"re:.*mlp\.gate$",))),
    "qwen3-moe-ct-class-experts": (mic.QWEN3_MOE_WIDE, ct_groups(
        (["RoutedExperts"], mic.FP8_DYNAMIC), (["Linear"], mic.W4A16),
        ignore=("lm_head", r"re:.*mlp\.gate$"))),
})

for name, (cfg, quant) in CASES.items():
    (HERE / f"{name}.config.json").write_text(
        json.dumps({**cfg, "quantization_config": quant}, indent=1) + "\n")
