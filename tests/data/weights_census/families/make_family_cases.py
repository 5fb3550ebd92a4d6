"""Write the census configs here (python make_family_cases.py, in this folder): last session's
families (Gemma 3n / Gemma 4 text, LFM2 / LFM2-MoE, Mamba / Mamba2, Nemotron-H, the pre-Llama
decoders) under each quantisation method vLLM 0.33 builds for them, and with ignore lists /
dynamic rules naming each family's own modules."""
# ruff: noqa
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1]


def read(rel):
    cfg = json.loads((DATA / rel).read_text())
    cfg.pop("quantization_config", None)
    return cfg


PLANNING = json.loads((DATA / "sched_gemma" / "planning.json").read_text())
# (the classic decoders' published configs, 2 layers: every module kind, built fast)
CLASSIC = {
    "gpt2": ("gpt2", "n_layer", "transformer.h", "attn.c_attn", "mlp.c_proj"),
    "gpt-j": ("gpt-j-6b", "n_layer", "transformer.h", "attn.out_proj", "mlp.fc_out"),
    "starcoder": ("starcoder", "n_layer", "transformer.h", "attn.c_proj", "mlp.c_fc"),
    "bloom": ("bloom-560m", "n_layer", "transformer.h", "self_attention.dense",
              "mlp.dense_4h_to_h"),
    "gpt-neox": ("gpt-neox-20b", "num_hidden_layers", "gpt_neox.layers",
                 "attention.query_key_value", "mlp.dense_4h_to_h"),
    "opt": ("opt-350m", "num_hidden_layers", "model.decoder.layers", "self_attn.out_proj",
            "fc2"),
    "falcon": ("falcon-7b", "num_hidden_layers", "transformer.h", "self_attention.dense",
               "mlp.dense_4h_to_h"),
    "phi": ("phi-2", "num_hidden_layers", "model.layers", "self_attn.dense", "mlp.fc2"),
    "chatglm": ("chatglm3-6b", "num_layers", "transformer.encoder.layers",
                "self_attention.dense", "mlp.dense_4h_to_h"),
    "dbrx": ("dbrx-instruct", "n_layers", "transformer.blocks", "norm_attn_norm.attn.out_proj",
             "norm_attn_norm.attn.Wqkv"),
}
# (the new families' tiny configs widened to 1024 so that groups of 128 divide at TP 4)
LFM2 = {**read("lfm2/tiny-lfm2.config.json"), "hidden_size": 1024, "block_dim": 1024,
        "conv_dim": 1024, "num_attention_heads": 8, "num_key_value_heads": 4,
        "intermediate_size": 2048, "block_auto_adjust_ff_dim": False}
LFM2_MOE = {**read("lfm2/tiny-lfm2-moe.config.json"), "hidden_size": 1024,
            "num_attention_heads": 8, "num_key_value_heads": 4, "intermediate_size": 2048,
            "moe_intermediate_size": 512, "num_hidden_layers": 4, "num_dense_layers": 1,
            "layer_types": ["conv", "full_attention", "conv", "full_attention"]}
MAMBA1 = {**read("mamba_only/tiny-mamba1.config.json"), "hidden_size": 1024,
          "num_hidden_layers": 2, "state_size": 16}
MAMBA2 = {**read("mamba_only/tiny-mamba2.config.json"), "hidden_size": 1024,
          "num_hidden_layers": 2, "num_heads": 32, "head_dim": 64, "n_groups": 4,
          "state_size": 128}
GEMMA4_MOE = {**PLANNING["gemma4-moe"]["config"], "num_hidden_layers": 2, "num_experts": 8,
              "moe_intermediate_size": 512, "layer_types": ["sliding_attention",
                                                            "full_attention"],
              "per_layer_config": {"1": {"head_dim": 512}}, "torch_dtype": "bfloat16"}
FAMILIES = {
    "gemma3n": (PLANNING["gemma3n_small"]["config"], "model.layers", "self_attn.o_proj",
                "mlp.down_proj"),
    "gemma4": (PLANNING["gemma4_small"]["config"], "model.layers", "self_attn.o_proj",
               "mlp.down_proj"),
    "gemma4-moe": (GEMMA4_MOE, "model.layers", "self_attn.o_proj", "mlp.down_proj"),
    "lfm2": (LFM2, "model.layers", "conv.out_proj", "feed_forward.w2"),
    "lfm2-moe": (LFM2_MOE, "model.layers", "self_attn.out_proj", "feed_forward.w2"),
    "mamba1": (MAMBA1, "backbone.layers", "mixer.x_proj", "mixer.out_proj"),
    "mamba2": (MAMBA2, "backbone.layers", "mixer.in_proj", "mixer.out_proj"),
    "nemotron-h": (read("weights_census/fp8/nemotron-h-fp8.config.json"), "backbone.layers",
                   "mixer.out_proj", "mixer.down_proj"),
}
for name, (file, key, prefix, attn, mlp) in CLASSIC.items():
    FAMILIES[name] = ({**read(f"gpt_family/{file}.config.json"), key: 2}, prefix, attn, mlp)
FAMILIES["dbrx"][0]["ffn_config"] = {**FAMILIES["dbrx"][0]["ffn_config"], "moe_num_experts": 4}

FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic"}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}


def ct(fmt, weights, inputs=None, ignore=("lm_head",), targets=("Linear",)):
    """A compressed-tensors quantization_config as llm-compressor writes it: one group."""
    return {"quant_method": "compressed-tensors", "format": fmt, "quantization_status":
            "compressed", "ignore": list(ignore), "config_groups": {"group_0": {
                "targets": list(targets), "weights": {"symmetric": True, "dynamic": False,
                                                      "actorder": None, **weights},
                "input_activations": inputs, "output_activations": None}}}


W4A16 = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}
W8 = {"num_bits": 8, "type": "int", "strategy": "channel"}
A8 = {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True, "symmetric": True}


def modelopt(algo, ignore=("lm_head",)):
    return {"quant_method": "modelopt", "quant_algo": algo, "ignore": list(ignore),
            "producer": {"name": "modelopt", "version": "0.37.0"}}


def methods(prefix, attn, mlp):
    """Each method, plain and with a list naming the family's own modules (vLLM's paths)."""
    layer0, layer1 = f"{prefix}.0", f"{prefix}.1"
    return {
        "fp8": FP8,
        "fp8-block": {**FP8, "weight_block_size": [128, 128]},
        "fp8-skip": {**FP8, "ignored_layers": [f"{layer0}.{attn}", f"{layer1}.{mlp}"]},
        "awq": AWQ,
        "awq-skip": {**AWQ, "modules_to_not_convert": [f"{layer1}.{mlp}", attn]},
        "gptq": GPTQ,
        "gptq-dynamic": {**GPTQ, "dynamic": {f"-:.*{layer1.replace('.', '[.]')}[.].*": {}}},
        "ct-w8a8": ct("int-quantized", W8, A8),
        "ct-w4a16": ct("pack-quantized", W4A16),
        "ct-w4a16-ignore": ct("pack-quantized", W4A16, ignore=(
            "lm_head", f"re:.*{mlp.replace('.', '[.]')}$", f"{layer0}.{attn}")),
        "modelopt-fp8": modelopt("FP8"),
        "modelopt-nvfp4": modelopt("NVFP4"),
    }


if __name__ == "__main__":
    for f in HERE.glob("*.config.json"):
        f.unlink()
    for fam, (cfg, prefix, attn, mlp) in FAMILIES.items():
        for m, quant in methods(prefix, attn, mlp).items():
            dtype = "float16" if m.startswith(("awq", "gptq")) else "bfloat16"
            out = {**cfg, "torch_dtype": dtype, "quantization_config": quant}
            out.pop("dtype", None)
            (HERE / f"{fam}-{m}.config.json").write_text(json.dumps(out, indent=1) + "\n")
