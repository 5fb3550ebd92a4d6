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


def methods(tower_names, tower_ignore=TOWER_IGNORE):
    """Each method, and with lists naming the tower and projector (`tower_names`: AWQ's,
    `tower_ignore`: compressed-tensors')."""
    return {
        "fp8-block": BLOCK,
        "fp8": FP8,
        "ct-fp8": ct("float-quantized", F8W, F8A),
        "ct-fp8-ignore-tower": ct("float-quantized", F8W, F8A, tower_ignore),
        "ct-w4a16": ct("pack-quantized", W4A16),
        "ct-w4a16-ignore-tower": ct("pack-quantized", W4A16, None, tower_ignore),
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


def chat_base(arch, model_type, heads=4, **vit):
    """An InternVL remote-code checkpoint (../internvl_chat's tiny-internvit-layernorm-... made
    256 wide with a 2-layer Qwen2 of 256, MLP 512: whole 128-groups at TP 1 and 2)."""
    cfg = read("internvl_chat/tiny-internvit-layernorm-qkvbias-select3.config.json")
    cfg.update(architectures=[arch], model_type=model_type, select_layer=-1)
    cfg["vision_config"].update(hidden_size=256, intermediate_size=512, num_hidden_layers=3,
                                num_attention_heads=heads, patch_size=16, **vit)
    cfg["llm_config"].update(hidden_size=256, intermediate_size=512, num_attention_heads=8,
                             num_key_value_heads=4)
    return cfg


CHAT = ["vision_model", "mlp1"]
CHAT_IGNORE = ["re:.*lm_head", "re:.*vision_model.*", "re:.*mlp1.*"]
CHAT_BASES = {
    "tiny-internvl-chat": (chat_base("InternVLChatModel", "internvl_chat"), CHAT),
    "tiny-h2ovl-q": (chat_base("H2OVLChatModel", "h2ovl_chat", qk_normalization=True,
                               norm_type="rms_norm", qkv_bias=False), CHAT),
    # (one head and InternViT's 7 dummy ones: 8 heads of 256, as NVLM-D's 25 + 7)
    "tiny-nvlm-d-q": (chat_base("NVLM_D", "NVLM_D", heads=1), CHAT),
    "tiny-skywork-q": (chat_base("SkyworkR1VChatModel", "skywork_chat"), CHAT),
    # (InternS1ForConditionalGeneration, model_type interns1: the HF-format tiny-internvl)
    "tiny-interns1": ({**BASES["tiny-internvl"][0],
                       "architectures": ["InternS1ForConditionalGeneration"],
                       "model_type": "interns1"}, LLAVA),
}
# OpenGVLab's AWQ checkpoints (InternVL3-8B-AWQ and kin, written from what I know of them, not
# downloaded): the quantization_config in llm_config alone, without modules_to_not_convert, so
# internvl.py's _patch_quant_config adds "vision_model"; -awq-both has one at the top as well
# (InternVL3-38B-AWQ-style), the top one read and patched as the text config has its own
AWQ_LLM = {**AWQ, "modules_to_not_convert": None}


VISUAL = ["visual"]
VISUAL_IGNORE = ["re:.*lm_head", "re:.*visual.*"]
# the Qwen-VL towers at visual. (fp8 already in ../quant2 and ../fp8: the other methods here)
QWEN_BASES = {
    "qwen2-vl-7b": (read("quant2/qwen2-vl-7b-fp8.config.json"), VISUAL),
    "qwen2.5-vl-7b": (read("quant2/qwen2.5-vl-7b-fp8.config.json"), VISUAL),
    "qwen3-5-vl": (read("fp8/qwen3-5-vl-fp8.config.json"), VISUAL),
    "qwen3-5-moe-vl": (read("fp8/qwen3-5-moe-vl-fp8.config.json"), VISUAL),
}


def main():
    BASES.update(QWEN_BASES)
    for base, (cfg, names) in CHAT_BASES.items():
        BASES[base] = (cfg, names)
        if "llm_config" in cfg:
            llm = {**cfg["llm_config"], "quantization_config": AWQ_LLM}
            out = {**cfg, "llm_config": llm}
            (HERE / f"{base}-awq-llm.config.json").write_text(json.dumps(out, indent=1) + "\n")
            out = {**out, "quantization_config": AWQ_LLM}
            (HERE / f"{base}-awq-both.config.json").write_text(json.dumps(out, indent=1) + "\n")
    for base, (cfg, names) in BASES.items():
        # (GLM's own ["visual"] keeps the LLaVA regexes, which miss its tower)
        ignore = CHAT_IGNORE if names is CHAT else VISUAL_IGNORE if names is VISUAL else \
            TOWER_IGNORE
        for m, qc in methods(names, ignore).items():
            out = {**cfg, "quantization_config": qc}
            (HERE / f"{base}-{m}.config.json").write_text(json.dumps(out, indent=1) + "\n")
    for name, (rel, qc) in PUBLISHED.items():
        out = {**read(rel), "quantization_config": qc}
        (HERE / f"{name}.config.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
