"""Write the census configs here (python make_cases.py, in this folder): the towers of the
LLaVA family, Mistral 3, PaliGemma, InternVL (Hugging Face format) and GLM-4.1V / 4.5V under
each quantisation method, with and without an ignore list naming the tower and projector, and
three published-style checkpoints written from their model cards (not downloaded)."""
# ruff: noqa
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent


def read(rel):
    cfg = json.loads((DATA / rel).read_text())
    cfg.pop("quantization_config", None)
    return cfg


FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic"}
BLOCK = {**FP8, "weight_block_size": [128, 128]}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
# (llm-compressor's, as RedHatAI's Mistral-Small-3.1 FP8-dynamic and quantized.w4a16 write it)
TOWER_IGNORE = ["re:.*lm_head", "re:.*vision_tower.*", "re:.*multi_modal_projector.*"]


def ct(fmt, weights, inputs=None, ignore=("re:.*lm_head",)):
    return {"quant_method": "compressed-tensors", "format": fmt, "quantization_status":
            "compressed", "ignore": list(ignore), "config_groups": {"group_0": {
                "targets": ["Linear"], "weights": {"symmetric": True, "dynamic": False,
                                                   "actorder": None, **weights},
                "input_activations": inputs, "output_activations": None}}}


W4A16 = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}
F8W = {"num_bits": 8, "type": "float", "strategy": "channel"}
F8A = {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True, "symmetric": True}
MODELOPT = {"quant_method": "modelopt", "quant_algo": "FP8", "ignore": ["lm_head"],
            "producer": {"name": "modelopt", "version": "0.37.0"}}


def methods(tower_names):
    """Each method, and with lists naming the tower and projector (`tower_names`: AWQ's)."""
    return {
        "fp8-block": BLOCK,
        "fp8": FP8,
        "ct-fp8": ct("float-quantized", F8W, F8A),
        "ct-fp8-ignore-tower": ct("float-quantized", F8W, F8A, TOWER_IGNORE),
        "ct-w4a16": ct("pack-quantized", W4A16),
        "ct-w4a16-ignore-tower": ct("pack-quantized", W4A16, None, TOWER_IGNORE),
        "awq": AWQ,
        "awq-skip-tower": {**AWQ, "modules_to_not_convert": tower_names},
        "gptq": GPTQ,
        "modelopt-fp8": MODELOPT,
    }


def widen(cfg, hidden, inter, heads, **more):
    cfg["vision_config"].update(hidden_size=hidden, intermediate_size=inter,
                                num_attention_heads=heads, **more)
    return cfg


LLAVA = ["vision_tower", "multi_modal_projector"]
BASES = {
    # (tiny towers 256 wide: whole 128-groups and blocks at TP 1 and 2, not at 4 and 8)
    "tiny-llava-clip": (widen(read("llava_towers/tiny-llava-clip-last.config.json"), 256, 512,
                              4, num_hidden_layers=3), LLAVA),
    "tiny-llava-siglip": (widen(read("llava_towers/tiny-llava-siglip.config.json"), 256, 512,
                                4, num_hidden_layers=3), LLAVA),
    "tiny-mistral3": (widen(read("llava_towers/tiny-mistral3-bias-merge3-layer-3.config.json"),
                            256, 512, 8, head_dim=32), LLAVA),
    "tiny-internvl": (widen(read("llava_towers/tiny-internvl-flags.config.json"), 256, 512, 4),
                      LLAVA),
    "paligemma-3b-pt-224": (read("llava_towers/paligemma-3b-pt-224.config.json"), LLAVA),
    "glm-4.1v-9b-thinking": (read("glm_kimi_towers/glm-4.1v-9b-thinking.config.json"),
                             ["visual"]),
}
# published-style checkpoints (their quantization_config written from the model cards)
PUBLISHED = {
    # RedHatAI/Mistral-Small-3.1-24B-Instruct-2503-FP8-dynamic and -quantized.w4a16
    "mistral-small-3.1-24b-ct-fp8-dynamic": (
        "llava_towers/mistral-small-3.1-24b.config.json",
        ct("float-quantized", F8W, F8A, TOWER_IGNORE)),
    "mistral-small-3.1-24b-ct-w4a16": (
        "llava_towers/mistral-small-3.1-24b.config.json",
        ct("pack-quantized", W4A16, None, TOWER_IGNORE)),
    # zai-org/GLM-4.5V-FP8: compressed-tensors fp8, the tower and routers ignored
    "glm-4.5v-ct-fp8": ("glm_kimi_towers/glm-4.5v.config.json",
                        ct("float-quantized", F8W, F8A,
                           ["lm_head", "re:.*visual.*", "re:.*mlp[.]gate$"])),
}


def main():
    for base, (cfg, names) in BASES.items():
        for m, qc in methods(names).items():
            out = {**cfg, "quantization_config": qc}
            (HERE / f"{base}-{m}.config.json").write_text(json.dumps(out, indent=1) + "\n")
    for name, (rel, qc) in PUBLISHED.items():
        out = {**read(rel), "quantization_config": qc}
        (HERE / f"{name}.config.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
