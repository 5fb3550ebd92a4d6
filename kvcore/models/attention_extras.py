"""The model types whose attention layers carry parts their config does not flag: a QKV bias,
q/k norms (read by `kvcore.models.hf_config` into the geometry; counted by the weights)."""

from __future__ import annotations

# Model types whose QKV projection always has a bias (qwen2.py, qwen2_moe.py)
QKV_BIAS_TYPES = ("qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl",  # (the VL: Qwen2ForCausalLM)
                  "dots_ocr")     # (dots.ocr's Qwen2ForCausalLM)
# Model types whose attention always has a q_norm and a k_norm (qwen3.py, qwen3_moe.py,
# gemma3.py build them unconditionally)
QK_NORM_TYPES = ("qwen3", "qwen3_moe", "gemma3", "gemma3_text", "lfm2", "lfm2_moe",
                 "qwen3_vl_text", "qwen3_vl_moe_text",     # (Qwen3-VL's: Qwen3's layers)
                 "exaone4",     # (exaone4.py's, under EXAONE 4.5 too)
                 # (minimax_m2.py's; transformers' HunYuan, OLMo 2 / 3, FlexOLMo on the
                 # Transformers backend: tests/data/size_fuzz)
                 "minimax_m2", "hunyuan_v1_dense", "hunyuan_v1_moe", "olmo2", "olmo3",
                 "flex_olmo", "kolibri1")
# q/k norms where ``use_qk_norm``: GLM-4.5's (and GLM-4.5V's text model's), Command R+'s
USE_QK_NORM_TYPES = ("glm4_moe", "glm4v_moe_text", "cohere")
