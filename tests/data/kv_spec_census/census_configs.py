# ruff: noqa
"""A tiny config.json per architecture of vLLM 0.33's registry, for record_kv_specs.py.

The config class is the one vLLM itself would load for the architecture: vLLM's own
(`vllm.transformers_utils.config._CONFIG_REGISTRY`, by model_type) or transformers' (its auto
mappings read backwards: architecture -> model_type), or the model_type named in MODEL_TYPES
below where neither maps the architecture's name (a checkpoint's config.json names it). The
class's defaults are kept (they are what a published checkpoint of that class looks like),
with the text model cut to at most MAX_LAYERS layers: every per-layer list or string
(layer_types, no_rope_layers, hybrid_override_pattern, ...) cut with it, so the pattern's start
is kept; OVERRIDES gives the keys a pattern needs beyond that (Gemma 3n's shared layers).
"""
import json
import sys
from pathlib import Path

MAX_LAYERS = 8
# Architectures whose name no auto mapping or vLLM config names: the model_type their
# published checkpoints give (vLLM's registry maps the name to the model file, not a config)
MODEL_TYPES = {
    "LLaMAForCausalLM": "llama", "Llama4ForCausalLM": "llama4_text", "InternLM3ForCausalLM": "llama",
    "IQuestCoderForCausalLM": "llama", "TeleChat3ForCausalLM": "llama",
    "MiMoForCausalLM": "qwen2", "PhiMoEForCausalLM": "phimoe",
    "DeepseekForCausalLM": "deepseek_v2", "Step3TextForCausalLM": "step3_text",
    "Step3p5ForCausalLM": "step3p5", "Step5ForCausalLM": "step5",
    "ExaoneMoEForCausalLM": "exaone_moe", "NemotronHPuzzleForCausalLM": "nemotron_h",
    "ChatGLMModel": "chatglm", "ChatGLMForConditionalGeneration": "chatglm",
    "DoryForCausalLM": "dory", "FlintForCausalLM": "flint",
    "HyperCLOVAXForCausalLM": "hyperclovax", "MiniMaxM3SparseForCausalLM": "minimax_m3_vl",
    "Step3VLForConditionalGeneration": "step3_vl", "KimiVLForConditionalGeneration": "kimi_vl",
    "GLM4VForCausalLM": "chatglm",
    "KimiK25ForConditionalGeneration": "kimi_k25", "KimiK3ForConditionalGeneration": "kimi_k3",
    "Ovis": "ovis", "UltravoxModel": "ultravox", "DeepseekVLV2ForCausalLM": "deepseek_vl_v2",
    "IsaacForConditionalGeneration": "isaac", "MiDashengLMModel": "midashenglm",
    "Moondream3ForCausalLM": "moondream3", "OpenVLAForActionPrediction": "openvla",
    "BagelForConditionalGeneration": "bagel", "Alpamayo2Super": "alpamayo2_super",
    "BailingMoeV3VLForConditionalGeneration": "bailing_moe_v3_vl",
    "FunAudioChatForConditionalGeneration": "funaudiochat",
    "Dots3NoteForCausalLM": "dots3_note", "UnlimitedOCRForCausalLM": "unlimited_ocr",
    "DeepseekV41ForCausalLM": "deepseek_v41", "PixtralForConditionalGeneration": "pixtral",
    "Qwen2_5OmniModel": "qwen2_5_omni", "Step5ForConditionalGeneration": "step5_vl",
    # (remote code: ../weights_census/internvl_chat/internvl_chat_config.py's class,
    # registered by record_kv_specs.py)
    "InternVLChatModel": "internvl_chat", "H2OVLChatModel": "h2ovl_chat", "NVLM_D": "NVLM_D",
    "SkyworkR1VChatModel": "skywork_chat", "InternS1ForConditionalGeneration": "interns1",
    "InternLM2ForCausalLM": "internlm2",
    # (dots.ocr: vLLM's own DotsOCRConfig, registered by record_kv_specs.py)
    "DotsOCRForCausalLM": "dots_ocr",
}
# remote-code classes whose config class has no defaults of its own (rewritten to keep a
# config.json's keys: ../weights_census/mm_minicpm_idefics_phi/remote_configs.py): a published
# checkpoint's config.json from there instead, cut as the others
PUBLISHED = {"MiniCPMV": "minicpm-v-2_6", "Phi3VForCausalLM": "phi-3.5-vision-instruct",
             "Phi4MMForCausalLM": "phi-4-multimodal-instruct",
             # (ERNIE-4.5-VL: its -PT checkpoint's remote-code config, weights_census/mm_ernie;
             # transformers' own ernie4_5_vl_moe format is one vLLM 0.33 cannot build)
             "Ernie4_5_VLMoeForConditionalGeneration": "../mm_ernie/ernie-4.5-vl-28b-a3b-pt",
             # (Keye-VL's: remote code, rewritten in mm_ernie/keye_config.py)
             "KeyeForConditionalGeneration": "../mm_ernie/keye-vl-8b-preview",
             "KeyeVL1_5ForConditionalGeneration": "../mm_ernie/keye-vl-1_5-8b",
             # (Nemotron Nano VL V2's and Molmo's: ../weights_census/mm_nemo/)
             "NemotronH_Nano_VL_V2": "../mm_nemo/nvidia-nemotron-nano-12b-v2-vl-bf16",
             "MolmoForCausalLM": "../mm_nemo/molmo-7b-d-0924",
             # (Molmo2's remote code, rewritten: ../weights_census/mm_molmo2/)
             "Molmo2ForConditionalGeneration": "../mm_molmo2/molmo2-8b",
             # (MiniCPM-o's and Intern-S1-Pro's: ../weights_census/mm_audio/)
             "MiniCPMO": "../mm_audio/minicpm-o-2_6",
             "InternS1ProForConditionalGeneration": "../mm_audio/intern-s1-pro-bf16",
             # (LightOnOCR's: its published mistral3 config, ../weights_census/mm_cohere;
             # transformers' lighton_ocr class lacks keys vLLM's class reads)
             "LightOnOCRForConditionalGeneration": "../mm_cohere/lightonocr-1b",
             # (Granite 4 Vision's config class leaves deepstack_layer_map null, which vLLM
             # cannot build: mm_cohere's synthetic config)
             "Granite4VisionForConditionalGeneration": "../mm_cohere/granite4-vision-synthetic",
             # (DeepSeek-OCR's: DeepseekVLV2Config's own language_config default is MLA,
             # not the published MoE text model; ../weights_census/mm_ocr/)
             "DeepseekOCRForCausalLM": "../mm_ocr/deepseek-ocr",
             "DeepseekOCR2ForCausalLM": "../mm_ocr/deepseek-ocr-2",
             # (Ovis's, whose OvisConfig defaults no hidden_size, and the remote code of Ovis2.5,
             # Ovis2.6, Eagle 2.5, OpenCUA and Kanana-V: ../weights_census/mm_ovis/)
             "Ovis": "../mm_ovis/ovis2-8b", "Ovis2_5": "../mm_ovis/ovis2.5-9b",
             "Ovis2_6ForCausalLM": "../mm_ovis/tiny-ovis2.6-naflex",
             "Ovis2_6_MoeForCausalLM": "../mm_ovis/ovis2.6-30b-a3b",
             "Eagle2_5_VLForConditionalGeneration": "../mm_ovis/eagle2.5-8b",
             "OpenCUAForConditionalGeneration": "../mm_ovis/opencua-7b",
             "KananaVForConditionalGeneration": "../mm_ovis/kanana-1.5-v-3b",
             # (Ultravox's, its text_config written out: ../weights_census/mm_audio2/)
             "UltravoxModel": "../mm_audio2/ultravox-v0_5-llama-3_2-1b-inline",
             # (LLaVA-OneVision-2's remote code, rewritten: ../weights_census/mm_towers12b/)
             "LlavaOnevision2ForConditionalGeneration": "../mm_towers12b/llava-onevision-2-8b",
             # (Qianfan-OCR's: QianfanOCRConfig defaults none of force_image_size,
             # select_layer, ps_version, which vLLM reads)
             "QianfanOCRForConditionalGeneration": "../mm_towers12b/qianfan-ocr",
             # (the Nemotron Omni names: Nemotron Nano VL V2's remote config, with a sound
             # encoder or without: ../weights_census/mm_towers12b/)
             "NemotronH_Nano_Omni_Reasoning_V3": "../mm_towers12b/nemotron-omni-12b-synthetic",
             "NemotronH_Omni_Reasoning_V3": "../mm_towers12b/tiny-nemotron-omni",
             "NemotronH_Super_Omni_Reasoning_V3":
                 "../mm_towers12b/tiny-nemotron-super-omni-no-sound"}
PUBLISHED_DIR = "../weights_census/mm_minicpm_idefics_phi"
# (the remote-code config classes mm_ovis's configs need, rewritten there: Ovis2.5's, Eagle
# 2.5's, OpenCUA's, Kanana-V's, registered with AutoConfig; record_kv_specs.py lists them)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "weights_census" / "mm_ovis"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "weights_census" / "mm_towers12b"))
import ovis_config, towers12b_config
ovis_config.register()
towers12b_config.register()
# (a list of its own: each module's list holds its own substitutions, and the recorder joins them)
SUBSTITUTIONS = ovis_config.SUBSTITUTIONS + towers12b_config.SUBSTITUTIONS
# keys a layer pattern needs beside the cut (by architecture)
OVERRIDES = {
    # (Qwen3OmniMoeTextConfig defaults no tie_word_embeddings, which vLLM reads)
    "Qwen3OmniMoeForConditionalGeneration": {"tie_word_embeddings": False},
    # 35 layers, the last 15 sharing KV: 8 layers, the last 3 sharing (one of each kind
    # reused: the pattern is 4 sliding, 1 full)
    "Gemma3nForCausalLM": {"num_kv_shared_layers": 3},
    "Gemma3nForConditionalGeneration": {"num_kv_shared_layers": 3},
    # vLLM's LFM2 reads block_dim, which Lfm2Config does not default (LFM2's checkpoints: the
    # hidden size), and LFM2-VL builds the text model its text_config names
    "Lfm2VlForConditionalGeneration": {"block_dim": 2560, "architectures": ["Lfm2ForCausalLM"]},
    # DeepSeek-V3.2's sparse-attention indexer (its checkpoints' values; DeepseekV3Config
    # has no such keys, and vLLM asserts index_topk)
    "DeepseekV32ForCausalLM": {"index_topk": 2048, "index_head_dim": 128, "index_n_heads": 64},
    # GLM-4.7-Flash's (Glm4MoeLiteConfig has no first_k_dense_replace; glm4_moe_lite.py reads it)
    "Glm4MoeLiteForCausalLM": {"first_k_dense_replace": 1},
    # LongCat-Flash's published checkpoint's keys, which LongcatFlashConfig lacks and
    # longcat_flash.py reads
    "LongcatFlashForCausalLM": {"mla_scale_q_lora": True, "mla_scale_kv_lora": True,
                                "zero_expert_type": "identity"},
    # keys vLLM's model file reads that the config class does not default (their published
    # checkpoints' values: GLM-4.5, AFMoE, MiniMax-M2, Hunyuan, Step-3.5, Qwen3-VL-MoE, Nemotron)
    "Glm4MoeForCausalLM": {"head_dim": 128},
    "Glm4vMoeForConditionalGeneration": {"head_dim": 128, "use_qk_norm": False},
    # the windows their published checkpoints give (Phi-3-mini-4k's, StarCoder2-15B's; the
    # class defaults give none), whether vLLM slides on them or not
    "Phi3ForCausalLM": {"sliding_window": 2047}, "Starcoder2ForCausalLM": {"sliding_window": 4096},
    # transformers' default says linear_attention for every layer; Granite-4.0-H's checkpoints
    # say mamba with an attention layer among them (the start of their pattern)
    "GraniteMoeHybridForCausalLM": {"layer_types": ["mamba"] * 5 + ["attention"] + ["mamba"] * 2},
    "HunYuanDenseV1ForCausalLM": {"head_dim": 128}, "HunYuanMoEV1ForCausalLM": {"head_dim": 128},
    "AfmoeForCausalLM": {"score_func": "sigmoid", "route_norm": True, "n_group": 1,
                         "topk_group": 1},
    "MiniMaxM2ForCausalLM": {"rotary_dim": 64, "scoring_func": "sigmoid"},
    "HYV3ForCausalLM": {"first_k_dense_replace": 1, "expert_hidden_dim": 1536,
                        "route_norm": True},
    # (its num_attention_groups is num_key_value_heads: transformers' attribute_map)
    "Step3p5ForCausalLM": {"use_moe_router_bias": True, "need_fp32_gate": True,
                           "moe_num_experts": 8, "moe_top_k": 2, "norm_expert_weight": True,
                           "rope_theta": 10000.0},
    "Qwen3VLMoeForConditionalGeneration": {"norm_topk_prob": True},
    "NemotronForCausalLM": {"num_key_value_heads": 8},
    "CohereCompassForConditionalGeneration": {"tie_word_embeddings": True},
    # chatglm.py reads original_rope and tie_word_embeddings, which vLLM's ChatGLMConfig does
    # not default (ChatGLM3's and GLM-4's checkpoints: true, false), and their grouped KV
    # heads (2 groups)
    "ChatGLMModel": {"original_rope": True, "tie_word_embeddings": False,
                     "multi_query_attention": True, "multi_query_group_num": 2},
    "ChatGLMForConditionalGeneration": {"original_rope": True, "tie_word_embeddings": False,
                                        "multi_query_attention": True,
                                        "multi_query_group_num": 2},
    # dbrx.py reads attn_config.rope_theta, which DbrxAttentionConfig does not default (DBRX's
    # checkpoints: 500,000; their 8 KV heads and clip_qkv 8)
    "DbrxForCausalLM": {"attn_config": {"kv_n_heads": 8, "clip_qkv": 8, "rope_theta": 500000}},
    # step3_text.py splits moe_layers_enum, a string in Step3's checkpoint (its class default
    # is a tuple, which it cannot split): the published layers 4-59, cut to 8 layers; Step3-VL
    # builds the text model its text_config names
    "Step3TextForCausalLM": {"moe_layers_enum": "4,5,6,7"},
    "Step3VLForConditionalGeneration": {"moe_layers_enum": "4,5,6,7",
                                        "architectures": ["Step3TextForCausalLM"]},
    # GLM-4V (THUDM/glm-4v-9b): ChatGLM's keys as the ChatGLM rows, its 2 groups, and an
    # EVA2-CLIP vision_config (glm4v.py reads every key; a small tower)
    "GLM4VForCausalLM": {"original_rope": True, "tie_word_embeddings": False,
                         "multi_query_attention": True, "multi_query_group_num": 2,
                         "add_qkv_bias": True, "vision_config": {
                             "dropout_prob": 0.0, "hidden_act": "gelu", "in_channels": 3,
                             "num_hidden_layers": 2, "hidden_size": 64, "patch_size": 14,
                             "num_heads": 4, "intermediate_size": 128, "layer_norm_eps": 1e-06,
                             "num_positions": 17, "image_size": 56, "scaling_factor": 8}},
}
# top-level keys (beside the text model's): the towers vLLM reads that the config classes
# leave null (Gemma 4's vision_config: without one vLLM cannot build the class; its audio
# tower too, as Gemma 4's E2B/E4B checkpoints have one)
TOP_OVERRIDES = {
    "Gemma4ForConditionalGeneration": {"vision_config": {"model_type": "gemma4_vision"},
                                       "audio_config": {"model_type": "gemma4_audio"}},
    "Gemma4UnifiedForConditionalGeneration": {
        "vision_config": {"model_type": "gemma4_unified_vision"},
        "audio_config": {"model_type": "gemma4_unified_audio"}},
}
# a thinker's vision config's keys its class does not default and vLLM reads (Qwen3-Omni's
# vision tower: image_size and apply_vit_abs_pos_embed, as Qwen/Qwen3-Omni-30B-A3B-Instruct)
THINKER_VISION = {"Qwen3OmniMoeForConditionalGeneration": {"image_size": 768,
                                                          "apply_vit_abs_pos_embed": True}}
# where a wrapper keeps its text model's config
TEXT_KEYS = ("text_config", "llm_config", "language_config", "thinker_config")
LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers")


def _reverse_auto_mappings():
    from transformers.models.auto import modeling_auto
    out = {}
    for name in dir(modeling_auto):
        m = getattr(modeling_auto, name)
        if name.endswith("_MAPPING_NAMES") and isinstance(m, dict):
            for mt, cls in m.items():
                for c in cls if isinstance(cls, (list, tuple)) else [cls]:
                    out.setdefault(c, mt)
    return out


def config_class(arch, reverse):
    """(model_type, config class) or (None, why not)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from vllm.transformers_utils.config import _CONFIG_REGISTRY
    mt = MODEL_TYPES.get(arch) or reverse.get(arch)
    if mt is None:
        return None, ("no config class: transformers 5.20.2 and vLLM's configs name no "
                      "model_type for it (its checkpoints bring remote code)")
    try:
        return mt, _CONFIG_REGISTRY[mt] if mt in _CONFIG_REGISTRY else CONFIG_MAPPING[mt]
    except Exception as e:
        return None, f"no config class for model_type {mt!r}: {type(e).__name__}: {e}"[:300]


def _cut(d, n_old, n_new):
    for k, v in list(d.items()):
        if isinstance(v, (list, str)) and len(v) == n_old and k not in ("model_type",):
            d[k] = v[:n_new]
        elif isinstance(v, dict) and v and all(str(i).isdigit() for i in v):
            d[k] = {i: x for i, x in v.items() if int(i) < n_new}   # (Gemma 4's per layer)


def _text_dict(d):
    for k in TEXT_KEYS:
        if isinstance(d.get(k), dict):
            return _text_dict(d[k])
    return d


def shrink(d, arch):
    """Cut the text model to MAX_LAYERS layers (in place), its per-layer lists with it."""
    t = _text_dict(d)
    for key in LAYER_KEYS:
        n = t.get(key)
        if isinstance(n, int) and n > MAX_LAYERS:
            t[key] = MAX_LAYERS
            _cut(t, n, MAX_LAYERS)
            break
    t.update(OVERRIDES.get(arch, {}))
    d.update(TOP_OVERRIDES.get(arch, {}))
    if arch == "DeepseekVLV2ForCausalLM":
        # (DeepseekVLV2Config writes its text config as text_config but reads it back from
        # language_config, and defaults tile_tag to "tile_tag", which vLLM refuses: the
        # published configs' keys)
        d["language_config"], d["tile_tag"] = d.pop("text_config"), "2D"
    if arch in THINKER_VISION:
        d["thinker_config"]["vision_config"].update(THINKER_VISION[arch])
    for x in (d, t):
        x["dtype"] = x["torch_dtype"] = "bfloat16"


def make_config(arch, reverse):
    """(config dict, None) or (None, why not)."""
    if arch in PUBLISHED:
        from pathlib import Path
        d = json.loads((Path(__file__).parent / PUBLISHED_DIR /
                        f"{PUBLISHED[arch]}.config.json").read_text())
        shrink(d, arch)
        return d, None
    mt, cls = config_class(arch, reverse)
    if mt is None:
        return None, cls
    try:
        d = cls().to_dict()
    except Exception as e:
        return None, f"config class {cls.__name__}() refused its defaults: {type(e).__name__}: {e}"[:300]
    d = json.loads(json.dumps(d, default=str))
    d["architectures"] = [arch]
    d.setdefault("model_type", mt)
    shrink(d, arch)
    return d, None


# DeciLMForCausalLM: its stand-in config class and config (../nemotron_nas/nas_census.py)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "nemotron_nas"))
import nas_census
SUBSTITUTIONS = SUBSTITUTIONS + nas_census.SUBSTITUTIONS
