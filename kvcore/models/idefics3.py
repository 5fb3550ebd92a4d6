"""Idefics3's and SmolVLM's vision tower and connector as vLLM 0.33 builds them
(idefics3.py, smolvlm.py, idefics2_vision_model.py), per TP rank, and the NaViT encoder they
share with MiniCPM-V (`kvcore.models.minicpmv`).

`Idefics2VisionTransformer` (Idefics3's `Idefics3VisionTransformer` is the same class): the
patch embedding (a biased Conv2d), (image_size / patch_size)^2 position rows, each layer
SigLIP's shape (`vision_keys.vit_layer`: its QKV and fc1 column-parallel, out_proj and fc2
row-parallel, split over TP unless ``--mm-encoder-tp-mode data`` where the class takes it) and
the post LayerNorm; no buffer (its position ids are made per image). `Idefics3Connector`: the
pixel shuffle folds scale_factor^2 patches into one, so its one ReplicatedLinear, without bias,
takes vision hidden x scale_factor^2 to the text hidden size, whole on every rank. The
encoder's four linears a layer and the connector's take the quant_config
(`kvcore.models.tower_int_quant`, `fp8_vision`; census tests/data/weights_census/
quant_towers3/). The tower
is dropped with the image limit at 0; Idefics3 does not take ``--mm-encoder-tp-mode data``.
Absent vision_config or keys: transformers 5.20.2's Idefics3VisionConfig /
SmolVLMVisionConfig defaults (SigLIP's widths, 224 px, patch 32). Checked per rank against
vLLM's classes on the meta device (tests/data/weights_census/mm_minicpm_idefics_phi/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.clip_siglip import SIGLIP_DEFAULTS, encoder, encoder_linears
from kvcore.models.vision_keys import VisionLinear, VisionParams, vision_config, vision_dim

IDEFICS3_ARCHS = ("Idefics3ForConditionalGeneration", "SmolVLMForConditionalGeneration")
# Idefics3VisionConfig's and SmolVLMVisionConfig's defaults (transformers 5.20.2)
IDEFICS3_DEFAULTS = {**SIGLIP_DEFAULTS, "hidden_size": 1152, "num_attention_heads": 16,
                     "patch_size": 32}


def navit(v: dict[str, Any], defaults: dict[str, int], layers: int, source: str,
          post_norm: bool = True, at: str = "") -> VisionParams:
    """`Idefics2VisionTransformer` of vision config `v` built to `layers` layers, with its
    post LayerNorm unless not `post_norm` (Phi-4-multimodal's): SigLIP's encoder without its
    position_ids buffer. Its linears, at vLLM's path `at` (none: the class builds it without
    the quant_config, Phi-4-multimodal's), all four a layer: Idefics2VisionMLP takes the
    quant_config whatever its widths (SigLIP's own only at multiples of 64)."""
    enc = encoder("siglip", v, defaults, layers, post_norm, source)
    d, inter = (vision_dim(v, defaults, k, source) for k in ("hidden_size", "intermediate_size"))
    return enc._replace(buffers=0, linears=encoder_linears(layers, d, inter, True,
                                                           f"{at}.encoder") if at else ())


def idefics3_vision_params(cfg: dict[str, Any], text_hidden: int,
                           source: str) -> VisionParams:
    v = vision_config(cfg, source)
    scale = cfg.get("scale_factor", 2)
    if not isinstance(scale, int) or isinstance(scale, bool) or not 1 <= scale < 2**8:
        raise InputError(f"expected an integer >= 1, got {clipped(scale)}",
                         path=source or None, field="scale_factor")
    layers = vision_dim(v, IDEFICS3_DEFAULTS, "num_hidden_layers", source)
    enc = navit(v, IDEFICS3_DEFAULTS, layers, source, at="model.vision_model")
    d = vision_dim(v, IDEFICS3_DEFAULTS, "hidden_size", source)
    connector = d * scale * scale * text_hidden
    # (the connector's one ReplicatedLinear takes the quant_config too, whole on every rank)
    proj = VisionLinear("model.connector.modality_projection.proj", (text_hidden,),
                        d * scale * scale, "replicated")
    return VisionParams(enc.total + connector, enc.whole + connector, enc.heads, ("image",),
                        linears=(*enc.linears, proj))
