"""Gemma 3's vision tower and multi-modal projector, as vLLM 0.33 builds them for
`Gemma3ForConditionalGeneration` (gemma3_mm.py, siglip.py) and loads them on the first pipeline
stage.

`SiglipVisionModel` (no pooling head: gemma3_mm.py never asks for one): the patch embedding (a
biased Conv2d), the position embedding ((image_size / patch_size)^2 rows), ``num_hidden_layers``
encoder layers (two LayerNorms with biases, a biased QKVParallelLinear and RowParallelLinear
out_proj, a biased ColumnParallelLinear fc1 and RowParallelLinear fc2) and the post LayerNorm;
`Gemma3MultiModalProjector`: ``mm_input_projection_weight`` (vision x text hidden, a plain
Parameter) and ``mm_soft_emb_norm`` (a GemmaRMSNorm, one vision hidden wide). TP splits the
column- and row-parallel weights and the column-parallel biases; the embeddings, norms,
row-parallel biases and the projector stay whole on every rank (vLLM's default
``mm_encoder_tp_mode`` "weights"). Checked per rank against vLLM's own classes on the meta
device (tests/data/weights_census/).
"""

from __future__ import annotations

from typing import Any

from kvcore.models.clip_siglip import SIGLIP_DEFAULTS, encoder, encoder_linears
from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim

__all__ = ["SIGLIP_DEFAULTS", "encoder_linears", "gemma3_vision_params"]
# (SIGLIP_DEFAULTS, transformers 5.20.2's SiglipVisionConfig defaults, is what Gemma3Config
# builds for a config without a vision_config; google/gemma-3-*-it publish so400m's: 1152,
# 4304, 27, 16, 896, 14)


def gemma3_vision_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return vision_dim(v, SIGLIP_DEFAULTS, key, source)

    d, inter, layers = dim("hidden_size"), dim("intermediate_size"), dim("num_hidden_layers")
    # (SiglipVisionModel with its post LayerNorm; its position_ids are counted by
    # `kvcore.models.buffers.vision_buffers`)
    enc = encoder("siglip", v, SIGLIP_DEFAULTS, layers, True, source)
    projector = d * text_hidden + d
    # (siglip.py SiglipMLP builds fc1 and fc2 with quant_config None unless both widths are
    # multiples of 64)
    mlp = d % 64 == 0 and inter % 64 == 0
    # (modality image; Gemma3ForConditionalGeneration does not support_encoder_tp_data)
    return VisionParams(enc.total + projector, enc.whole + projector, enc.heads, ("image",),
                        False, encoder_linears(layers, d, inter, mlp))
