"""Keye-VL's vision tower and projector, as vLLM 0.33 builds them for
`KeyeForConditionalGeneration` (keye.py) and `KeyeVL1_5ForConditionalGeneration`
(keye_vl1_5.py) beside Qwen3's text model (`Qwen3ForCausalLM` on the top-level keys: its
remote-code configs, model_types ``Keye`` and ``KeyeVL1_5``, read as ``qwen3``).

`KeyeSiglipVisionModel` (the ``vision_config``, read as vLLM reads it: every key given): a
biased patch convolution (channels x p^2 -> d), (image_size / patch_size)^2 position
embeddings and 32,768 packing position embeddings, all whole on every rank, with an int64
``position_ids`` buffer as long; ``num_hidden_layers`` layers of the plain ViT shape
(`vit_layer`, the MLP intermediate_size wide); the post LayerNorm; a float32 ``inv_freq`` of
(head_dim / 2) / 2 entries. The projector (``mlp_AR``): a LayerNorm (Keye-VL's over d, 1.5's
over the merged 4 d, whole), a column-parallel linear 4 d -> 4 d and a row-parallel one to the
text width, biased. vLLM splits the tower's heads over TP (it refuses a TP that does not divide
them) and skips tower and projector where the image and video limits are 0; neither class
declares ``--mm-encoder-tp-mode data`` (vLLM falls back to weights).
"""

from __future__ import annotations

from typing import Any

from kvcore.models.clip_siglip import encoder_linears
from kvcore.models.vision_keys import (
    VisionLinear,
    VisionParams,
    config_int,
    vision_config,
    vit_layer,
)

KEYE_ARCHS = ("KeyeForConditionalGeneration", "KeyeVL1_5ForConditionalGeneration")
# (their text model: vLLM builds Qwen3ForCausalLM on the top-level keys)
KEYE_TEXT = {"Keye": "qwen3", "KeyeVL1_5": "qwen3"}
PACKING_POSITIONS = 32768      # (KeyeVisionEmbeddings' packing_position_embedding)


def keye_params(cfg: dict[str, Any], arch: str, text_hidden: int, source: str) -> VisionParams:
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return config_int(v, key, None, f"vision_config.{key}", source)

    d, inter, layers, heads = (dim("hidden_size"), dim("intermediate_size"),
                               dim("num_hidden_layers"), dim("num_attention_heads"))
    p = dim("patch_size")
    positions = (dim("image_size") // p) ** 2
    embeddings = dim("num_channels") * p * p * d + d + (positions + PACKING_POSITIONS) * d
    layer_whole, layer_split = vit_layer(d, inter)
    merged = 4 * d      # (the projector's fixed 2 x 2 merge kernel)
    norm = 2 * (merged if arch == "KeyeVL1_5ForConditionalGeneration" else d)
    whole = embeddings + layers * layer_whole + 2 * d + norm + text_hidden
    split = merged * merged + merged + merged * text_hidden
    buffers = 8 * positions + 4 * -(-(d // heads // 2) // 2)
    # (the encoder's linears and the projector's, built with the quant_config)
    linears = (*encoder_linears(layers, d, inter, True, at="visual.vision_model.encoder"),
               VisionLinear("mlp_AR.linear_1", (merged,), merged, "column"),
               VisionLinear("mlp_AR.linear_2", (text_hidden,), merged, "row"))
    return VisionParams(whole + layers * layer_split + split, whole, heads, ("image", "video"),
                        linears=linears, buffers=buffers)
