"""Phi-4-reasoning-vision (`Phi4ForCausalLMV`, phi4siglip.py) as vLLM 0.33 builds it beside
its Phi-3 language model (the config's own top-level keys: `Phi3ForCausalLM`), per TP rank.

The tower: vLLM's `Siglip2Model` (lfm2_siglip2.py) from the ``vision_config`` dict
(transformers' Siglip2VisionConfig defaults, ``patch_size`` 16), built to the layer the class
reads (-2: ``num_hidden_layers - 1`` layers) without the post LayerNorm: the biased patch
projection and ``num_patches`` position embeddings whole on every rank, each layer's plain ViT
shape (`vit_layer`). The projector: LLaVA's (``linear_1`` column-parallel from
``mm_hidden_size``, which the class reads and has no default, to the text width, ``linear_2``
row-parallel, both biased). The encoder's and projector's linears take the quant_config. No
``--mm-encoder-tp-mode data`` (vLLM falls back). Checked per rank against vLLM's class on the
meta device (tests/data/weights_census/mm_towers12/)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.clip_siglip import encoder_linears
from kvcore.models.lfm2_vl_tower import SIGLIP2_DEFAULTS
from kvcore.models.vision_keys import (
    VisionLinear,
    VisionParams,
    config_int,
    vision_config,
    vision_dim,
    vit_layer,
)

ARCH = "Phi4ForCausalLMV"


def phi4_siglip_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    v = vision_config(cfg, source)
    if cfg.get("mm_hidden_size") is None:
        raise InputError(f"missing: vLLM's {ARCH} reads it (the projector's input width), "
                         "which Phi3Config does not define", path=source or None,
                         field="mm_hidden_size")
    mm = config_int(cfg, "mm_hidden_size", None, "mm_hidden_size", source)

    def dim(key: str) -> int:
        return vision_dim(v, SIGLIP2_DEFAULTS, key, source)

    d, inter, p = dim("hidden_size"), dim("intermediate_size"), dim("patch_size")
    layers = dim("num_hidden_layers") - 1       # (the layer before the last: -2)
    embeddings = dim("num_channels") * p * p * d + d + dim("num_patches") * d
    layer_whole, layer_split = vit_layer(d, inter)
    h = text_hidden
    whole = embeddings + layers * layer_whole + h       # (linear_2's bias)
    split = layers * layer_split + mm * h + h + h * h
    linears = encoder_linears(layers, d, inter, mlp=True) + (
        VisionLinear("multi_modal_projector.linear_1", (h,), mm, "column"),
        VisionLinear("multi_modal_projector.linear_2", (h,), h, "row"))
    return VisionParams(whole + split, whole, dim("num_attention_heads"), ("image",),
                        linears=linears)
