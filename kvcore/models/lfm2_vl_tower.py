"""LFM2-VL's vision tower and projector, as vLLM 0.33 builds them for
`Lfm2VlForConditionalGeneration` (lfm2_vl.py, lfm2_siglip2.py) beside LFM2's text model
(`kvcore.models.lfm2`).

`Siglip2Model` (a ``siglip2_vision_model`` vision_config; vLLM refuses another): a biased patch
projection (channels x p^2 -> d, a ReplicatedLinear) and ``num_patches`` position embeddings;
``num_hidden_layers`` layers, each two LayerNorms, a biased QKV (column-parallel) and out_proj
(row-parallel), a biased fc1 (column) and fc2 (row); the post LayerNorm. TP splits the
column- and row-parallel weights and the column-parallel biases, and the heads (vLLM asserts
they divide). `Lfm2VLMultiModalProjector`, whole on every rank: an optional LayerNorm over
d x ``downsample_factor``^2, two ReplicatedLinears (``projector_bias``) through
``projector_hidden_size`` to the text width. The class does not take
``--mm-encoder-tp-mode data`` (vLLM falls back to weights).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.siglip import encoder_linears
from kvcore.models.vision_keys import (
    VisionParams,
    vision_config,
    vision_dim,
    vit_layer,
)

# transformers 5.20.2's Siglip2VisionConfig and Lfm2VlConfig defaults
SIGLIP2_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                    "num_attention_heads": 12, "num_channels": 3, "patch_size": 16,
                    "num_patches": 256}
PROJECTOR_DEFAULTS = {"projector_hidden_size": 2560, "downsample_factor": 2}


def lfm2_vl_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    v = vision_config(cfg, source)
    if v.get("model_type", "siglip2_vision_model") != "siglip2_vision_model":
        raise InputError(f"{v.get('model_type')!r}: vLLM's LFM2-VL builds a "
                         "siglip2_vision_model tower only", path=source or None,
                         field="vision_config.model_type")

    def dim(key: str) -> int:
        return vision_dim(v, SIGLIP2_DEFAULTS, key, source)

    def top(key: str) -> int:
        return vision_dim(cfg, PROJECTOR_DEFAULTS, key, source, key_of="")

    d, inter, layers, p = (dim("hidden_size"), dim("intermediate_size"),
                           dim("num_hidden_layers"), dim("patch_size"))
    embeddings = dim("num_channels") * p * p * d + d + dim("num_patches") * d
    layer_whole, layer_split = vit_layer(d, inter)
    wide, hid = d * top("downsample_factor") ** 2, top("projector_hidden_size")
    bias = cfg.get("projector_bias", True) is not False
    projector = (2 * wide if cfg.get("projector_use_layernorm", True) is not False else 0)
    projector += wide * hid + hid * text_hidden + (hid + text_hidden if bias else 0)
    whole = embeddings + layers * layer_whole + 2 * d + projector
    return VisionParams(whole + layers * layer_split, whole, dim("num_attention_heads"),
                        ("image",), False, encoder_linears(layers, d, inter, mlp=True))

