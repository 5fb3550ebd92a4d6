"""The vision tower vLLM 0.33 builds for LLaVA-OneVision-2
(`LlavaOnevision2ForConditionalGeneration`, llava_onevision2.py `LlavaOnevision2VisionTower`,
beside its Qwen3 text model), loaded on the first pipeline stage.

A patch embedding (a Conv2d without bias over ``patch_size``^2 pixels of ``num_channels``), a
LayerNorm before the trunk, ``num_hidden_layers`` plain ViT blocks ``hidden_size`` wide
(`vit_layer`: a fused biased QKV and output projection, a biased fc1 / fc2 of
``intermediate_size``), then the merger: a LayerNorm, a biased linear over
``spatial_merge_size``^2 patches and a biased one to the text model's width. No CLS token, no
position table: a 3-D rotary whose three float32 ``inv_freq`` buffers hold half the head dim.
Whole on every TP rank: the embedding, the norms and the row-parallel biases. The class passes
no data-parallel flag to the tower, so ``--mm-encoder-tp-mode data`` falls back to TP, and it
builds the tower without the quant_config (bf16 under any quantisation). Checked per rank
against vLLM's class on the meta device (tests/data/weights_census/mm_towers12b/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.vision_keys import VisionParams, config_int, vision_config, vit_layer

ARCH = "LlavaOnevision2ForConditionalGeneration"


def llava_onevision2_params(cfg: dict[str, Any], hidden: int, source: str) -> VisionParams:
    """The tower (its merger included) of a LLaVA-OneVision-2 config whose text model is
    `hidden` wide."""
    v = vision_config(cfg, source)

    def dim(key: str, default: int | None = None) -> int:
        # (the remote config class has no defaults: vLLM reads each key off it)
        return config_int(v, key, default, f"vision_config.{key}", source)

    d, inter, heads = dim("hidden_size"), dim("intermediate_size"), dim("num_attention_heads")
    layers, p, merge = dim("num_hidden_layers"), dim("patch_size"), dim("spatial_merge_size")
    channels = dim("num_channels", 3)
    if d % heads or (d // heads) % 32:
        # (the rotary splits half the head dim 4:6:6 in sixteenths: vLLM asserts it)
        raise InputError(f"hidden_size {d} over {heads} heads is not a head dim that is a "
                         "multiple of 32 (LLaVA-OneVision-2's 3-D rotary: vLLM asserts it)",
                         path=source or None, field="vision_config.num_attention_heads")
    layer_whole, layer_split = vit_layer(d, inter)
    merged = d * merge * merge
    whole = channels * p * p * d + 2 * d + layers * layer_whole + 2 * d + hidden
    total = whole + layers * layer_split + merged * merged + merged + merged * hidden
    return VisionParams(total, whole, heads, ("image", "video"), mlp_width=inter,
                        buffers=4 * (d // heads // 2))
