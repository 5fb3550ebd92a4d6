# ruff: noqa
"""Dev tool: the quantised Nemotron-NAS configs here, from ../nemotron_nas's configs with a
quantization_config as the published checkpoints carry one (README.md says what is assumed).
Run in this folder with any python: writes NAME.config.json."""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE = HERE.parent / "nemotron_nas"


def modelopt(algo, exclude, **extra):
    return {"quant_method": "modelopt", "quant_algo": algo, "exclude_modules": exclude,
            "producer": {"name": "modelopt", "version": "0.31.0"}, **extra}


NVFP4 = {"group_size": 16}
CASES = {
    "super-49b-v1_5-modelopt-fp8": ("super-49b-v1_5", modelopt("FP8", ["lm_head"])),
    "super-49b-v1_5-modelopt-nvfp4": ("super-49b-v1_5", modelopt("NVFP4", ["lm_head"], **NVFP4)),
    "ultra-253b-v1-modelopt-fp8": ("ultra-253b-v1", modelopt("FP8", ["lm_head"])),
    "super-49b-v1_5-fp8": ("super-49b-v1_5", {"quant_method": "fp8",
                                               "activation_scheme": "dynamic"}),
    "tiny-nas-a-modelopt-fp8-skip": ("tiny-nas-a", modelopt(
        "FP8", ["lm_head", "model.layers.1.mlp*", "model.layers.3.self_attn.o_proj"])),
    "tiny-nas-b-modelopt-fp8": ("tiny-nas-b", modelopt("FP8", [])),
    "tiny-nas-a-modelopt-nvfp4-skip": ("tiny-nas-a", modelopt(
        "NVFP4", ["lm_head", "model.layers.0.self_attn*", "model.layers.5.mlp.down_proj"],
        **NVFP4)),
    "tiny-nas-a-modelopt-half-qkv": ("tiny-nas-a", modelopt(
        "FP8", ["model.layers.0.self_attn.q_proj"])),
    "tiny-nas-a-fp8": ("tiny-nas-a", {"quant_method": "fp8", "activation_scheme": "dynamic"}),
    "tiny-nas-b-fp8-block": ("tiny-nas-b", {"quant_method": "fp8", "activation_scheme": "dynamic",
                                            "weight_block_size": [128, 128],
                                            "ignored_layers": ["model.layers.3.mlp.down_proj"]}),
}

for name, (base, quant) in CASES.items():
    cfg = json.loads((BASE / f"{base}.config.json").read_text())
    cfg["quantization_config"] = quant
    (HERE / f"{name}.config.json").write_text(json.dumps(cfg, indent=1) + "\n")
