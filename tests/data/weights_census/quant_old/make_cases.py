"""Write the census configs here (python make_cases.py, in this folder): the classes vLLM 0.33
serves through its Transformers backend (GPT-NeoX-20B, Phi-2, StarCoder, StarCoder2-3B and
-15B; ../../gpt_family's published configs cut to 2 layers) under AWQ, GPTQ (and its
channelwise act-order), compressed-tensors and ModelOpt, plain and with lists naming modules as
the checkpoints name them (the base model's own prefix), which vLLM renames to the backend's
paths before matching."""
# ruff: noqa
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAMILIES = HERE.parent / "families"
import sys
sys.path.insert(0, str(FAMILIES))
from make_family_cases import AWQ, A8, GPTQ, W4A16, W8, ct, modelopt, read  # noqa: E402

# name: (published config, the checkpoint's layers, an attention and an MLP module there)
MODELS = {
    "gpt-neox-20b": ("gpt-neox-20b", "gpt_neox.layers", "attention.dense", "mlp.dense_4h_to_h"),
    "phi-2": ("phi-2", "model.layers", "self_attn.dense", "mlp.fc2"),
    "starcoder": ("starcoder", "transformer.h", "attn.c_proj", "mlp.c_fc"),
    "starcoder2-3b": ("starcoder2-3b", "model.layers", "self_attn.o_proj", "mlp.c_proj"),
    "starcoder2-15b": ("starcoder2-15b", "model.layers", "self_attn.o_proj", "mlp.c_proj"),
}
LAYER_KEY = {"starcoder": "n_layer"}


def methods(prefix, attn, mlp):
    layer0, layer1 = f"{prefix}.0", f"{prefix}.1"
    return {
        "awq": AWQ,
        "awq-skip": {**AWQ, "modules_to_not_convert": [f"{layer1}.{mlp}", attn]},
        "gptq": GPTQ,
        "gptq-actorder": {**GPTQ, "desc_act": True, "group_size": -1},
        "gptq-8bit-g64": {**GPTQ, "bits": 8, "group_size": 64},
        "ct-w8a8": ct("int-quantized", W8, A8),
        "ct-w4a16": ct("pack-quantized", W4A16),
        "ct-w4a16-ignore": ct("pack-quantized", W4A16, ignore=(
            "lm_head", f"{layer0}.{attn}", f"{layer1}.{mlp}")),
        "modelopt-fp8": modelopt("FP8", ignore=("lm_head", f"{layer0}.{attn}")),
        "modelopt-nvfp4": modelopt("NVFP4"),
    }


if __name__ == "__main__":
    for f in HERE.glob("*.config.json"):
        f.unlink()
    for name, (file, prefix, attn, mlp) in MODELS.items():
        base = {**read(f"gpt_family/{file}.config.json"),
                LAYER_KEY.get(name, "num_hidden_layers"): 2}
        for m, quant in methods(prefix, attn, mlp).items():
            dtype = "float16" if m.startswith(("awq", "gptq")) else "bfloat16"
            out = {**base, "torch_dtype": dtype, "quantization_config": quant}
            out.pop("dtype", None)
            (HERE / f"{name}-{m}.config.json").write_text(json.dumps(out, indent=1) + "\n")
