"""Write the ModelOpt / fbgemm_fp8 census configs here (python make_modelopt_cases.py, in this
folder): the models of ../int_quant/make_int_cases.py under NVIDIA ModelOpt's and Meta's
fbgemm_fp8 quantization_configs."""
# ruff: noqa
import json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3]))
from kvcore.models.presets import PRESETS


def model(case):
    """A model of ../int_quant, its quantization_config taken off."""
    cfg = json.loads((HERE.parent / "int_quant" / f"{case}.config.json").read_text())
    cfg.pop("quantization_config")
    return cfg


# (tiny Llama 1024 wide, Qwen3-MoE of 8 experts 2048 wide, Mixtral of 4, DeepSeek-V3 of 2
# layers (MLA, the first dense, 8 routed experts 512 wide and a shared one): ../int_quant's;
# Llama-3.1-8B the preset's config.json, bfloat16 as ModelOpt's checkpoints are)
LLAMA, QWEN3_MOE = model("llama-awq"), model("qwen3-moe-ct-w4a16")
MIXTRAL, DSV3 = model("mixtral-gptq-8bit"), model("deepseek-v3-awq")
LLAMA_8B = {**PRESETS["llama-3.1-8b"][1], "torch_dtype": "bfloat16"}
# (../../mtp_draft's tiny Qwen3-Next and Qwen3.5 targets, 64 wide, one MTP module each: its fc;
# 8 attention and Gated DeltaNet heads and Qwen3-Next 8 experts, so that TP 8 builds)
QWEN3_NEXT, QWEN3_5 = ({**json.loads((HERE.parents[1] / "mtp_draft" / c / "target" / "config.json")
                                     .read_text()), "num_attention_heads": 8,
                        "linear_num_key_heads": 8, "linear_num_value_heads": 8, **x}
                       for c, x in (("4-tiny-qwen3-next", {"num_experts": 8}), ("9-tiny-qwen3-5", {})))
# (../fp8's tiny Gemma 3 with its SigLIP tower, its fp8 quantization_config taken off; the
# tower's 8 heads so that TP 8 builds)
GEMMA3_MM = {k: v for k, v in json.loads((HERE.parent / "fp8" / "gemma-3-mm-fp8.config.json")
                                         .read_text()).items() if k != "quantization_config"}
GEMMA3_MM["vision_config"] = {**GEMMA3_MM["vision_config"], "num_attention_heads": 8}
FP8_KV = {"dynamic": False, "num_bits": 8, "type": "float"}


def modelopt(algo, ignore=("lm_head",), **extra):
    """The config.json layout ModelOpt >= 0.31 writes (quant_method modelopt)."""
    return {"quant_method": "modelopt", "quant_algo": algo, "ignore": list(ignore),
            "kv_cache_scheme": FP8_KV, "producer": {"name": "modelopt", "version": "0.37.0"},
            **extra}


def legacy(algo, exclude=("lm_head",), **extra):
    """hf_quant_config.json's layout (no quant_method: vLLM names it from the producer)."""
    return {"producer": {"name": "modelopt", "version": "0.27.0"},
            "quantization": {"quant_algo": algo, "kv_cache_quant_algo": "FP8",
                             "exclude_modules": list(exclude), **extra}}


FBGEMM = {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0,
          "modules_to_not_convert": []}

def table(layers, **algos):
    """A MIXED_PRECISION quantized_layers table: module path -> its algorithm, for `layers`."""
    return {f"model.layers.{i}.{m}": {"quant_algo": a, **({"group_size": 16} if "NVFP4" in a
                                                          else {})}
            for i in layers for m, a in algos.items()}


QKV_FP8 = {f"self_attn.{p}": "FP8" for p in ("q_proj", "k_proj", "v_proj", "o_proj")}
EXPERTS_NVFP4 = {f"mlp.experts.{e}.{p}": "NVFP4" for e in range(8)
                 for p in ("gate_proj", "up_proj", "down_proj")}
MLA_FP8 = {f"self_attn.{p}": "FP8" for p in ("q_a_proj", "kv_a_proj_with_mqa", "q_b_proj",
                                               "kv_b_proj", "o_proj")}

CASES = {
    "llama-3-1-8b-modelopt-fp8": (LLAMA_8B, modelopt("FP8")),
    "llama-3-1-8b-modelopt-fp8-legacy": (LLAMA_8B, legacy("FP8")),
    "llama-3-1-8b-modelopt-nvfp4": (LLAMA_8B, modelopt("NVFP4", group_size=16)),
    "llama-3-1-8b-fbgemm-fp8": (LLAMA_8B, {**FBGEMM, "modules_to_not_convert": [
        *[f"model.layers.{i}.mlp.down_proj" for i in (0, 31)], "lm_head"]}),
    "llama-modelopt-fp8": (LLAMA, modelopt("FP8")),
    "llama-modelopt-fp8-head": (LLAMA, modelopt("FP8", ignore=())),
    # (a tied head: its weight the embedding's, the scales kept)
    "llama-modelopt-fp8-tied": ({**LLAMA, "tie_word_embeddings": True}, modelopt("FP8", ignore=())),
    "llama-modelopt-nvfp4-tied": ({**LLAMA, "tie_word_embeddings": True},
                                  modelopt("NVFP4", ignore=(), group_size=16)),
    "llama-modelopt-fp8-exclude": (LLAMA, modelopt("FP8", ignore=(
        "lm_head", "model.layers.0.self_attn*", "*layers.1.mlp.down_proj"))),
    # (the KV cache algorithm: none, so --kv-cache-dtype auto stays the model dtype; NVFP4)
    "llama-modelopt-fp8-no-kv": (LLAMA, modelopt("FP8", kv_cache_scheme=None)),
    "llama-modelopt-nvfp4-kv-nvfp4": (LLAMA, legacy("NVFP4", group_size=16,
                                                    kv_cache_quant_algo="NVFP4")),
    "llama-modelopt-fp8-pcpt": (LLAMA, modelopt("FP8_PER_CHANNEL_PER_TOKEN")),
    "llama-modelopt-fp8-pbwo": (LLAMA, modelopt("FP8_PB_WO")),
    "llama-modelopt-mxfp8": (LLAMA, modelopt("MXFP8")),      # (float16: refused)
    "llama-modelopt-mxfp8-bf16": ({**LLAMA, "torch_dtype": "bfloat16"}, modelopt("MXFP8")),
    # (down_proj's input 1056 / 2 = 528 a rank at TP 2: not whole 32s; the experts' the same)
    "llama-modelopt-mxfp8-narrow": ({**LLAMA, "torch_dtype": "bfloat16", "intermediate_size": 1056},
                                    modelopt("MXFP8")),
    "qwen3-moe-modelopt-mxfp8-narrow": ({**QWEN3_MOE, "moe_intermediate_size": 1056},
                                        modelopt("MXFP8", ignore=("lm_head", "*mlp.gate"))),
    "deepseek-v3-modelopt-mxfp8": ({**DSV3, "torch_dtype": "bfloat16"}, modelopt("MXFP8")),
    # (down_proj's input 1536 / 8 = 192 a rank at TP 8: not whole 128s; 1040 / 2 = 520 at TP 2:
    # not whole 16s)
    "llama-modelopt-fp8-pbwo-narrow": ({**LLAMA, "intermediate_size": 1536}, modelopt("FP8_PB_WO")),
    "llama-modelopt-nvfp4-narrow": ({**LLAMA, "intermediate_size": 1040},
                                    modelopt("NVFP4", group_size=16)),
    "llama-modelopt-nvfp4": (LLAMA, modelopt("NVFP4", group_size=16)),
    "llama-modelopt-nvfp4-legacy": (LLAMA, legacy("NVFP4", group_size=16)),
    "llama-modelopt-w4a16-nvfp4": (LLAMA, modelopt("W4A16_NVFP4", group_size=16)),
    "llama-modelopt-bogus": (LLAMA, modelopt("INT4_AWQ")),
    "llama-modelopt-legacy-mxfp8": (LLAMA, legacy("MXFP8")),
    "llama-fbgemm-fp8": (LLAMA, FBGEMM),
    # (MIXED_PRECISION: FP8 attention and NVFP4 experts, the router and head not listed; the
    # producer layout with no KV cache algorithm, each MLP projection its own; MLA's)
    "qwen3-moe-modelopt-mixed": (QWEN3_MOE, modelopt("MIXED_PRECISION", quantized_layers=table(
        (0, 1), **QKV_FP8, **EXPERTS_NVFP4))),
    "llama-modelopt-mixed-legacy": (LLAMA, legacy("MIXED_PRECISION", kv_cache_quant_algo=None,
                                                  quantized_layers={
        **table((0,), **{f"self_attn.{p}": "FP8_PER_CHANNEL_PER_TOKEN"
                         for p in ("q_proj", "k_proj", "v_proj")}, **{"self_attn.o_proj": "NVFP4"}),
        **table((1,), **{"mlp.gate_proj": "W4A16_NVFP4", "mlp.up_proj": "W4A16_NVFP4",
                         "mlp.down_proj": "FP8"}),
        "lm_head": {"quant_algo": "FP8"}})),
    "deepseek-v3-modelopt-mixed": (DSV3, modelopt("MIXED_PRECISION", quantized_layers=table(
        (0, 1), **MLA_FP8, **EXPERTS_NVFP4))),
    "llama-modelopt-mixed-half-qkv": (LLAMA, modelopt("MIXED_PRECISION", quantized_layers=table(
        (0,), **{"self_attn.q_proj": "FP8", "self_attn.k_proj": "NVFP4"}))),
    "llama-modelopt-mixed-empty": (LLAMA, modelopt("MIXED_PRECISION", quantized_layers={})),
    "qwen3-moe-modelopt-fp8": (QWEN3_MOE, modelopt("FP8", ignore=("lm_head", "*mlp.gate"))),
    # (the router not excluded: Qwen3-MoE's GateLinear takes the quant_config)
    "qwen3-moe-modelopt-fp8-gate": (QWEN3_MOE, modelopt("FP8")),
    "qwen3-moe-modelopt-nvfp4": (QWEN3_MOE, modelopt("NVFP4", ignore=("lm_head", "*mlp.gate"),
                                                     group_size=16)),
    "qwen3-moe-modelopt-mxfp8": (QWEN3_MOE, modelopt("MXFP8", ignore=("lm_head", "*mlp.gate"))),
    "qwen3-moe-fbgemm-fp8": (QWEN3_MOE, FBGEMM),
    "mixtral-modelopt-fp8": (MIXTRAL, modelopt("FP8", ignore=("lm_head", "*block_sparse_moe.gate"))),
    "mixtral-modelopt-nvfp4": (MIXTRAL, modelopt("NVFP4", group_size=16, ignore=(
        "lm_head", "*block_sparse_moe.gate"))),
    "deepseek-v3-modelopt-fp8": (DSV3, modelopt("FP8")),
    # (the MTP module, built at model.layers.2, excluded; the target's last layer's MLP
    # excluded, which the module must not follow)
    "deepseek-v3-modelopt-fp8-skip-mtp": (DSV3, modelopt("FP8", ignore=("lm_head",
                                                                       "model.layers.2*"))),
    "deepseek-v3-modelopt-fp8-skip-last": (DSV3, modelopt("FP8", ignore=(
        "lm_head", "model.layers.1.mlp*"))),
    "deepseek-v3-modelopt-nvfp4": (DSV3, modelopt("NVFP4", group_size=16, ignore=(
        "lm_head", "model.layers.*.self_attn*"))),
    # (the MTP module's fc: quantised unless excluded, never under NVFP4, whose class forces it
    # unquantised)
    "qwen3-next-modelopt-fp8": (QWEN3_NEXT, modelopt("FP8")),
    "qwen3-next-modelopt-fp8-skip-fc": (QWEN3_NEXT, modelopt("FP8", ignore=("lm_head", "mtp.fc"))),
    "qwen3-next-modelopt-nvfp4": (QWEN3_NEXT, modelopt("NVFP4", group_size=16)),
    "qwen3-5-text-modelopt-fp8": (QWEN3_5, modelopt("FP8")),
    "qwen3-5-text-modelopt-mxfp8": (QWEN3_5, modelopt("MXFP8")),
    # (the tower at vision_tower.vision_model: unquantised whatever the list; the language
    # model's layer 0 attention excluded by the checkpoint's name)
    "gemma-3-mm-modelopt-fp8": (GEMMA3_MM, modelopt("FP8")),
    "gemma-3-mm-modelopt-nvfp4": (GEMMA3_MM, modelopt("NVFP4", group_size=16)),
    "gemma-3-mm-modelopt-fp8-exclude": (GEMMA3_MM, modelopt("FP8", ignore=(
        "lm_head", "model.language_model.layers.0.self_attn*"))),
}

# (ModelOpt <= 0.29's layout: config.json without a quantization_config, the settings in the
# hf_quant_config.json beside it, written here as NAME.hf_quant_config.json)
FILES = {
    "llama-modelopt-mixed-file": (LLAMA, legacy("MIXED_PRECISION", quantized_layers={
        **table((0,), **{f"self_attn.{p}": "FP8" for p in ("q_proj", "k_proj", "v_proj")},
                **{"self_attn.o_proj": "NVFP4"}),
        **table((1,), **{"mlp.gate_proj": "W4A16_NVFP4", "mlp.up_proj": "W4A16_NVFP4",
                         "mlp.down_proj": "FP8_PER_CHANNEL_PER_TOKEN"}),
        "lm_head": {"quant_algo": "FP8"}})),
    "llama-modelopt-nvfp4-file": (LLAMA, legacy("NVFP4", group_size=16)),
}

for name, (cfg, quant) in CASES.items():
    (HERE / f"{name}.config.json").write_text(
        json.dumps({**cfg, "quantization_config": quant}, indent=1) + "\n")
for name, (cfg, quant) in FILES.items():
    (HERE / f"{name}.config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    (HERE / f"{name}.hf_quant_config.json").write_text(json.dumps(quant, indent=1) + "\n")
