"""Write the census configs here (python make_quant2_cases.py, in this folder): the quantised
linears kvcli counted in the model dtype. Qwen3-MoE's router (a GateLinear vLLM builds with
the quant_config) in Qwen3-VL-30B-A3B and a Qwen3-30B-A3B-shaped text model under each method,
with and without ignore lists naming it; DeepSeek-V3.2's and GLM-5's indexer under their
published fp8 (and per-tensor fp8, an ignored wq_b); the Qwen2-VL / Qwen2.5-VL towers under
fp8 (per tensor and block)."""
# ruff: noqa
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1]


def read(rel):
    cfg = json.loads((DATA / rel).read_text())
    cfg.pop("quantization_config", None)
    return cfg


FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic"}
BLOCK = {**FP8, "weight_block_size": [128, 128]}
# (DeepSeek-V3.2's published quantization_config)
DSV32 = {**BLOCK, "fmt": "e4m3"}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}


def ct(fmt, weights, inputs=None, ignore=("lm_head",)):
    return {"quant_method": "compressed-tensors", "format": fmt, "quantization_status":
            "compressed", "ignore": list(ignore), "config_groups": {"group_0": {
                "targets": ["Linear"], "weights": {"symmetric": True, "dynamic": False,
                                                   "actorder": None, **weights},
                "input_activations": inputs, "output_activations": None}}}


W4A16 = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}
W8 = {"num_bits": 8, "type": "int", "strategy": "channel"}
A8 = {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True, "symmetric": True}


def modelopt(algo, ignore=("lm_head",)):
    return {"quant_method": "modelopt", "quant_algo": algo, "ignore": list(ignore),
            "producer": {"name": "modelopt", "version": "0.37.0"}}


def router_methods(hf_layers, vllm_layers, n, vision=()):
    """Each method, and with lists naming the router: every layer's by the checkpoint's (HF)
    names, layer 0's by vLLM's, a regex; `vision` the tower's names a list also skips."""
    gates = [f"{hf_layers}.{i}.mlp.gate" for i in range(n)]
    return {
        "fp8": FP8,
        "fp8-block": BLOCK,
        "fp8-block-skip-gates": {**BLOCK, "modules_to_not_convert": ["lm_head", *gates]},
        "fp8-skip-gate0": {**FP8, "ignored_layers": [f"{vllm_layers}.0.mlp.gate"]},
        "awq": AWQ,
        "awq-skip-gate": {**AWQ, "modules_to_not_convert": ["mlp.gate", *vision]},
        "gptq": GPTQ,
        "gptq-skip-gate": {**GPTQ, "dynamic": {"-:.*mlp[.]gate$": {}}},
        "ct-w8a8": ct("int-quantized", W8, A8),
        "ct-w4a16": ct("pack-quantized", W4A16),
        "ct-w4a16-ignore-gate": ct("pack-quantized", W4A16,
                                   ignore=("lm_head", "re:.*mlp[.]gate$", *vision)),
        "modelopt-fp8": modelopt("FP8"),
        "modelopt-fp8-skip-gate": modelopt("FP8", ("lm_head", "*mlp.gate")),
        "modelopt-nvfp4": modelopt("NVFP4"),
    }


VL = read("qwen_vl/qwen3-vl-30b-a3b-instruct.config.json")
VL["text_config"] = {**VL["text_config"], "num_hidden_layers": 4}
TEXT = {**{k: v for k, v in VL["text_config"].items() if not k.startswith("rope")},
        "model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"],
        "rope_theta": 1000000.0, "tie_word_embeddings": False}
DSV = read("sparse_mla/deepseek-v3.2.config.json")
GLM5 = read("sparse_mla/glm-5.config.json")
# (4 layers, the last MoE: the indexer's linears in each)
DSV4 = {**DSV, "num_hidden_layers": 4, "first_k_dense_replace": 3}


def cases():
    out = {}
    for m, q in router_methods("model.language_model.layers", "language_model.model.layers", 4,
                               ("visual",)).items():
        out[f"qwen3-vl-moe-{m}"] = {**VL, "torch_dtype": "bfloat16", "quantization_config": q}
    for m, q in router_methods("model.layers", "model.layers", 4).items():
        out[f"qwen3-moe-{m}"] = {**TEXT, "torch_dtype": "bfloat16", "quantization_config": q}
    out["deepseek-v3.2-fp8-block"] = {**DSV, "quantization_config": DSV32}
    out["glm-5-fp8-block"] = {**GLM5, "quantization_config": DSV32}
    out["deepseek-v3.2-l4-fp8"] = {**DSV4, "quantization_config": FP8}
    out["deepseek-v3.2-l4-fp8-skip-wq-b"] = {**DSV4, "quantization_config": {
        **DSV32, "ignored_layers": ["model.layers.0.self_attn.indexer.wq_b"]}}
    out["deepseek-v3.2-l4-awq"] = {**DSV4, "torch_dtype": "float16", "quantization_config": AWQ}
    out["deepseek-v3.2-l4-modelopt-fp8"] = {**DSV4, "quantization_config": modelopt("FP8")}
    for name in ("qwen2-vl-7b-instruct", "qwen2.5-vl-7b-instruct"):
        cfg = read(f"qwen_vl/{name}.config.json")
        short = name.removesuffix("-instruct")
        out[f"{short}-fp8"] = {**cfg, "quantization_config": FP8}
        out[f"{short}-fp8-block"] = {**cfg, "quantization_config": BLOCK}
        out[f"{short}-fp8-skip-visual"] = {**cfg, "quantization_config": {
            **FP8, "ignored_layers": ["visual"]}}
    # (lists by the checkpoint's names: after transformers 4.52, and the original frame)
    q25 = read("qwen_vl/qwen2.5-vl-7b-instruct.config.json")
    out["qwen2.5-vl-7b-fp8-skip-hf-names"] = {**q25, "quantization_config": {
        **BLOCK, "ignored_layers": [
            "model.visual.blocks.0.attn.qkv", "model.visual.blocks.1.mlp.gate_proj",
            "model.visual.blocks.1.mlp.up_proj", "model.visual.merger.mlp.0",
            "model.language_model.layers.0.self_attn.o_proj", "lm_head"]}}
    out["qwen2.5-vl-7b-fp8-skip-half-gate-up"] = {**q25, "quantization_config": {
        **FP8, "ignored_layers": ["model.visual.blocks.0.mlp.gate_proj"]}}
    out["qwen2-vl-7b-fp8-skip-old-names"] = {
        **read("qwen_vl/qwen2-vl-7b-instruct.config.json"), "quantization_config": {
            **FP8, "modules_to_not_convert": [
                "model.layers.1.mlp.down_proj", "visual.blocks.2.mlp.fc2",
                "model.visual.merger.mlp.2"]}}
    return out


if __name__ == "__main__":
    for f in HERE.glob("*.config.json"):
        f.unlink()
    for name, cfg in cases().items():
        (HERE / f"{name}.config.json").write_text(json.dumps(cfg, indent=1) + "\n")
