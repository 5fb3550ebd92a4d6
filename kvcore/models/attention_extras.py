"""The model types whose attention layers carry parts their config does not flag: a QKV bias,
q/k norms (read by `kvcore.models.hf_config` into the geometry; counted by the weights)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Model types whose QKV projection always has a bias (qwen2.py, qwen2_moe.py)
QKV_BIAS_TYPES = ("qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl",  # (the VL: Qwen2ForCausalLM)
                  # (their text_config's model_type in transformers 5: tests/data/size_fuzz)
                  "qwen2_vl_text", "qwen2_5_vl_text",
                  "dots_ocr",     # (dots.ocr's Qwen2ForCausalLM)
                  "phimoe",       # (phimoe.py: qkv and o biased whatever attention_bias says)
                  "gpt_oss")      # (gpt_oss.py: bias=True on qkv and o, never read)
# Model types whose QKV bias is another key's, not ``attention_bias``: Qwen3-Next's and Qwen3.5's
# ``qkv_bias`` (qwen3_next.py's attention; its o_proj never biased). Found by tests/data/size_fuzz
BIAS_KEYS = {"qwen3_next": "qkv_bias", "qwen3_5_text": "qkv_bias", "qwen3_5_moe_text": "qkv_bias"}
# Model types whose attention always has a q_norm and a k_norm (qwen3.py, qwen3_moe.py,
# gemma3.py build them unconditionally)
QK_NORM_TYPES = ("qwen3", "qwen3_moe", "gemma3", "gemma3_text", "lfm2", "lfm2_moe",
                 "qwen3_vl_text", "qwen3_vl_moe_text",     # (Qwen3-VL's: Qwen3's layers)
                 "exaone4",     # (exaone4.py's, under EXAONE 4.5 too)
                 "exaone_moe",  # (exaone_moe.py's)
                 # (minimax_m2.py's; transformers' HunYuan, OLMo 2 / 3, FlexOLMo on the
                 # Transformers backend: tests/data/size_fuzz)
                 "minimax_m2", "hunyuan_v1_dense", "hunyuan_v1_moe", "olmo2", "olmo3",
                 "flex_olmo", "kolibri1", "apertus", "olmoe", "mellum")
# q/k norms where ``use_qk_norm``: GLM-4.5's (and GLM-4.5V's text model's), Command R+'s
USE_QK_NORM_TYPES = ("glm4_moe", "glm4v_moe_text", "cohere")

# Model types built by granite.py or granitemoe.py, whose attention holds a learned sink logit a
# query head (split over TP) where `granite_layer_attn_params` says: the config's
# ``attention_sinks``, else whether it has ``layer_types`` (the SWA configs always do:
# transformers fills them in). Found by tests/data/size_fuzz
GRANITE_SINK_TYPES = ("granite", "granite_swa", "granitemoe", "granitemoeshared",
                      "granitemoe_swa")
_LAYER_TYPES_FILLED = ("granite_swa", "granitemoe_swa")


def granite_sinks(model_type: str, c: dict, get) -> bool:
    """Whether a Granite (MoE) model's attention layers hold sinks (`GRANITE_SINK_TYPES`)."""
    if model_type not in GRANITE_SINK_TYPES:
        return False
    has_types = c.get("layer_types") is not None or model_type in _LAYER_TYPES_FILLED
    return bool(get("attention_sinks", has_types))


def attention_biased(model_type: str, get: Callable[..., Any]) -> bool:
    """Whether the attention's projections carry biases (`get`: the config's keys)."""
    return bool(get(BIAS_KEYS.get(model_type, "attention_bias"), False)) or (
        model_type in QKV_BIAS_TYPES)
