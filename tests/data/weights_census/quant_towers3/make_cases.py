"""Write the census configs here (python make_cases.py, in this folder): the towers counted for
MiniCPM-V, Idefics3 / SmolVLM, Phi-3.5-vision, Phi-4-multimodal, Qwen2-Audio, Qwen2.5-Omni and
Qwen3-Omni, under each quantisation method of ../quant_towers (its `methods`), with and
without lists naming the towers, and published-style checkpoints' quantization_config written
from what I know of their model cards (not downloaded)."""
# ruff: noqa
import copy, importlib.util, json
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
_spec = importlib.util.spec_from_file_location("qt_make", DATA / "quant_towers" / "make_cases.py")
qt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(qt)


def read(rel):
    cfg = json.loads((DATA / rel).read_text())
    cfg.pop("quantization_config", None)
    return cfg


def tiny_minicpm():
    """tiny-minicpm-v-2_6-drop, its tower 256 wide (MLP 512, 4 heads) and text 384 (the
    resampler's kv_proj 256 -> 384, its 3 heads of 128)."""
    cfg = read("mm_minicpm_idefics_phi/tiny-minicpm-v-2_6-drop.config.json")
    cfg["vision_config"].update(hidden_size=256, intermediate_size=512, num_attention_heads=4)
    cfg.update(hidden_size=384, intermediate_size=768)
    return cfg


def tiny_minicpm_512():
    """`tiny_minicpm` with text 512 (the resampler's 4 heads of 128): its language model
    whole 128-groups and blocks at TP 1, 2 and 4, so that the tower's shards decide."""
    cfg = tiny_minicpm()
    cfg.update(hidden_size=512, intermediate_size=1024)
    return cfg


def tiny_idefics(rel, **more):
    cfg = read(rel)
    cfg["vision_config"] = {**cfg.get("vision_config", {}), "hidden_size": 256,
                            "intermediate_size": 512, "num_attention_heads": 4,
                            "num_hidden_layers": 3, "image_size": 128, "patch_size": 16, **more}
    return cfg


def tiny_omni():
    """qwen2.5-omni-3b's thinker with its vision tower 256 wide (MLP 512, 4 heads, depth 2:
    whole 128-groups at TP 1 and 2) and a 2-layer text model of 512 (heads of 128, as its
    MRoPE sections ask)."""
    cfg = read("mm_omni/qwen2.5-omni-3b.config.json")
    t = cfg["thinker_config"]
    t["vision_config"].update(depth=2, embed_dim=256, hidden_size=256, intermediate_size=512,
                              num_heads=4, out_hidden_size=512, fullatt_block_indexes=[1])
    t["text_config"].update(hidden_size=512, intermediate_size=1024, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2)
    t["audio_config"].update(encoder_layers=2, output_dim=512)
    return cfg


MINICPM = ["vpm", "resampler"]
IDEFICS = ["vision_model", "connector"]
PHI3V = ["vision_embed_tokens"]
OMNI = ["visual", "audio_tower"]
AUDIO = ["audio_tower", "multi_modal_projector"]
PHI4 = ["vision_encoder", "embed_tokens_extend"]


def regexes(names):
    return ["re:.*lm_head"] + [f"re:.*{n}.*" for n in names]


BASES = {
    "tiny-minicpm-v-2_6": (tiny_minicpm(), MINICPM),
    "tiny-idefics3": (tiny_idefics("mm_minicpm_idefics_phi/tiny-idefics3-default-tower"
                                   ".config.json"), IDEFICS),
    "tiny-smolvlm": (tiny_idefics("mm_minicpm_idefics_phi/tiny-smolvlm-partial-tower"
                                  ".config.json"), IDEFICS),
    "tiny-phi3v": (read("mm_minicpm_idefics_phi/tiny-phi3v-last-layer.config.json"), PHI3V),
    "tiny-phi4mm": (read("mm_minicpm_idefics_phi/tiny-phi4mm-small-audio.config.json"), PHI4),
    "tiny-qwen2.5-omni": (tiny_omni(), OMNI),
}
MINICPM_26 = "mm_minicpm_idefics_phi/minicpm-v-2_6.config.json"
AUDIO_7B = "mm_omni/qwen2-audio-7b-instruct.config.json"
# published checkpoints under some of the methods (the published sizes build slowly), and
# published-style checkpoints: (base config, quantization_config)
PUBLISHED = {
    "minicpm-v-2_6-awq-tower": (MINICPM_26, qt.AWQ),
    "minicpm-v-2_6-fp8": (MINICPM_26, qt.FP8),
    "minicpm-v-2_6-gptq": (MINICPM_26, qt.GPTQ),
    "minicpm-v-2_6-ct-fp8-ignore-tower": (MINICPM_26, qt.ct("float-quantized", qt.F8W, qt.F8A,
                                                            regexes(MINICPM))),
    "qwen2-audio-7b-instruct-awq": (AUDIO_7B, qt.AWQ),
    "qwen2-audio-7b-instruct-fp8": (AUDIO_7B, qt.FP8),
    "qwen2-audio-7b-instruct-ct-w4a16": (AUDIO_7B, qt.ct("pack-quantized", qt.W4A16)),
    "smolvlm-256m-awq": ("mm_minicpm_idefics_phi/smolvlm-256m-instruct.config.json", qt.AWQ),
    # openbmb/MiniCPM-V-2_6-int4: bitsandbytes nf4, the tower and resampler left out
    "minicpm-v-2_6-int4-bnb": ("mm_minicpm_idefics_phi/minicpm-v-2_6.config.json", {
        "quant_method": "bitsandbytes", "load_in_4bit": True, "load_in_8bit": False,
        "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True,
        "bnb_4bit_compute_dtype": "bfloat16", "llm_int8_skip_modules": [
            "out_proj", "kv_proj", "lm_head"]}),
    # openbmb/MiniCPM-V-2_6-AWQ-style (AutoAWQ's fork: the language model alone)
    "minicpm-v-2_6-awq-skip-tower": ("mm_minicpm_idefics_phi/minicpm-v-2_6.config.json",
                          {**qt.AWQ, "modules_to_not_convert": ["vpm", "resampler"]}),
    # Qwen/Qwen2.5-Omni-7B-AWQ and -GPTQ-Int4 (the thinker's language model quantised)
    "qwen2.5-omni-7b-awq": ("mm_omni/qwen2.5-omni-7b.config.json",
                            {**qt.AWQ, "modules_to_not_convert": ["visual", "audio_tower"]}),
    "qwen2.5-omni-7b-gptq-int4": ("mm_omni/qwen2.5-omni-7b.config.json", {
        **qt.GPTQ, "dynamic": {"-:.*visual.*": {}, "-:.*audio_tower.*": {}}}),
    "qwen2.5-omni-7b-awq-tower": ("mm_omni/qwen2.5-omni-7b.config.json", qt.AWQ),
    "qwen2.5-omni-7b-fp8": ("mm_omni/qwen2.5-omni-7b.config.json", qt.FP8),
    # Qwen/Qwen3-Omni-30B-A3B-Instruct FP8-style: fp8 blocks of 128, the towers left out
    "qwen3-omni-30b-fp8-block": ("mm_omni/qwen3-omni-30b-a3b-instruct.config.json", {
        **qt.BLOCK, "modules_to_not_convert": ["audio_tower", "visual", "lm_head",
                                               "mlp.gate"]}),
    "qwen3-omni-30b-fp8-block-tower": ("mm_omni/qwen3-omni-30b-a3b-instruct.config.json",
                                       qt.BLOCK),
    "qwen3-omni-30b-ct-fp8": ("mm_omni/qwen3-omni-30b-a3b-instruct.config.json",
                              qt.ct("float-quantized", qt.F8W, qt.F8A,
                                    ["lm_head", "re:.*visual.*", "re:.*audio_tower.*",
                                     "re:.*mlp[.]gate$"])),
    "qwen3-omni-30b-ct-w4a16": ("mm_omni/qwen3-omni-30b-a3b-instruct.config.json",
                                qt.ct("pack-quantized", qt.W4A16)),
    "qwen3-omni-30b-awq": ("mm_omni/qwen3-omni-30b-a3b-instruct.config.json", qt.AWQ),
    # HuggingFaceTB/SmolVLM fp8 (llm-compressor FP8-dynamic, the tower kept)
    "smolvlm-256m-ct-fp8-dynamic": ("mm_minicpm_idefics_phi/smolvlm-256m-instruct.config.json",
                                    qt.ct("float-quantized", qt.F8W, qt.F8A,
                                          regexes(IDEFICS))),
    "idefics3-8b-fp8": ("mm_minicpm_idefics_phi/idefics3-8b-llama3.config.json", qt.FP8),
    "phi-3.5-vision-awq": ("mm_minicpm_idefics_phi/phi-3.5-vision-instruct.config.json",
                           qt.AWQ),
    "phi-4-multimodal-fp8": ("mm_minicpm_idefics_phi/phi-4-multimodal-instruct.config.json",
                             qt.FP8),
}


def main():
    for base, (cfg, names) in BASES.items():
        for m, qc in qt.methods(names, regexes(names)).items():
            out = {**copy.deepcopy(cfg), "quantization_config": qc}
            (HERE / f"{base}-{m}.config.json").write_text(json.dumps(out, indent=1) + "\n")
    for m in ("awq", "fp8-block", "ct-w4a16"):
        out = {**tiny_minicpm_512(), "quantization_config": qt.methods(MINICPM)[m]}
        (HERE / f"tiny-minicpm-v-2_6-t512-{m}.config.json").write_text(
            json.dumps(out, indent=1) + "\n")
    for name, (rel, qc) in PUBLISHED.items():
        out = {**read(rel), "quantization_config": qc}
        (HERE / f"{name}.config.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
