"""Cosmos3-Edge's vision tower and projector (`Cosmos3EdgeForConditionalGeneration`,
cosmos3_edge.py) as vLLM 0.33 builds them beside its text model:

* ``visual.encoder``: lfm2_siglip2.py's `Siglip2VisionTransformer` (LFM2-VL's, counted the
  same way: `kvcore.models.lfm2_vl_tower`): a biased patch projection and ``num_patches``
  position embeddings, ``num_hidden_layers`` layers (two LayerNorms, a biased QKV and out_proj,
  a biased fc1 and fc2, split over TP as column / row parallel), the post LayerNorm;
* ``visual.projector`` (`Cosmos3EdgePatchMerger`): a LayerNorm over the tower's width (not
  post-shuffle), a biased column-parallel fc1 from d x ``spatial_merge_size``^2 to the
  top-level ``projector_hidden_size``, a biased row-parallel fc2 to the text width.
Sizes missing from the file are transformers 5.20.2's Cosmos3EdgeVisionConfig and
Cosmos3EdgeConfig defaults. The class takes ``--mm-encoder-tp-mode data``
(``supports_encoder_tp_data``). Found by tests/data/size_fuzz (seed 2, s2-0096: kvcli counted
the text model alone); checked there against vLLM's class built on the meta device."""

from __future__ import annotations

from typing import Any

from kvcore.models.siglip import encoder_linears
from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim, vit_layer

ARCH = "Cosmos3EdgeForConditionalGeneration"
VISION_DEFAULTS = {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
                   "num_attention_heads": 16, "num_channels": 3, "patch_size": 16,
                   "num_patches": 256, "spatial_merge_size": 2}
TOP_DEFAULTS = {"projector_hidden_size": 11520}


def cosmos3_edge_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return vision_dim(v, VISION_DEFAULTS, key, source)

    d, inter, layers, p = (dim("hidden_size"), dim("intermediate_size"),
                           dim("num_hidden_layers"), dim("patch_size"))
    embeddings = dim("num_channels") * p * p * d + d + dim("num_patches") * d
    layer_whole, layer_split = vit_layer(d, inter)
    merged = d * dim("spatial_merge_size") ** 2
    mid = vision_dim(cfg, TOP_DEFAULTS, "projector_hidden_size", source, key_of="")
    # (the norm and fc2's bias whole on every rank; fc1's weight and bias, fc2's weight split)
    whole = embeddings + layers * layer_whole + 2 * d + 2 * d + text_hidden
    split = layers * layer_split + merged * mid + mid + mid * text_hidden
    return VisionParams(whole + split, whole, dim("num_attention_heads"), ("image", "video"),
                        True, encoder_linears(layers, d, inter, mlp=True))
