"""OpenCUA's vision tower, as vLLM 0.33 builds it for `OpenCUAForConditionalGeneration`
(opencua.py): Qwen2.5-VL's tower and merger (`kvcore.models.qwen_vl`) from its
``vision_config``, with its rotary cache, beside a plain Qwen2 language model built from
``text_config`` (architectures forced to ``Qwen2ForCausalLM``; 1-D RoPE, no MRoPE). Images
only (the tower is skipped at an image limit of 0); the class takes ``--mm-encoder-tp-mode
data``."""

from __future__ import annotations

from typing import Any

from kvcore.models.qwen_vl import qwen_vl_params, rotary_buffer_bytes
from kvcore.models.vision_keys import VisionParams

# (its tower is Qwen2.5-VL's: the defaults a key left out gets are that config class's)
QWEN2_5_VL = "Qwen2_5_VLForConditionalGeneration"


def opencua_params(cfg: dict[str, Any], source: str, dtype_bytes: int) -> VisionParams:
    tower = qwen_vl_params(cfg, QWEN2_5_VL, source)
    return tower._replace(modalities=("image",),
                          buffers=rotary_buffer_bytes(cfg, QWEN2_5_VL, dtype_bytes))
