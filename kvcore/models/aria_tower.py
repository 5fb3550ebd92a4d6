"""Aria's vision tower and projector, as vLLM 0.33 builds them for
`AriaForConditionalGeneration` (aria.py) beside its MoE text model.

`AriaVisionTransformer`: Idefics3's NaViT encoder (`kvcore.models.idefics3.navit`) whose post
LayerNorm Aria replaces by an Identity (so none is built). `AriaProjector`, whole on every rank
but for its feed-forward: ``query`` (max_value_projector_patch_to_query_dict x vision hidden, a
plain Parameter), transformers' `AriaCrossAttention` (q/k/v_proj without bias, an
nn.MultiheadAttention with its biased in- and out-projections, a biased ``linear``, two
LayerNorms), its own LayerNorm, and `AriaProjectorMLP`: ``linear_in`` column-parallel (vision
hidden -> text hidden) and ``linear_out`` row-parallel (text hidden -> text hidden), neither
biased nor built with the quant_config. The class does not take ``--mm-encoder-tp-mode data``.
Checked per rank against vLLM's classes on the meta device (tests/data/weights_census/
mm_cohere/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.idefics3 import IDEFICS3_DEFAULTS, navit
from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim


def _queries(cfg: dict[str, Any], source: str) -> int:
    """The projector's query rows: AriaConfig's ``max_value_projector_patch_to_query_dict``,
    the largest of ``projector_patch_to_query_dict``'s values (default {1225: 128,
    4900: 256})."""
    table = cfg.get("projector_patch_to_query_dict")
    table = {1225: 128, 4900: 256} if table is None else table
    values = list(table.values()) if isinstance(table, dict) else []
    if not values or not all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x < 2**31
                             for x in values):
        raise InputError(f"expected an object of integers >= 1, got {clipped(table)}",
                         path=source or None, field="projector_patch_to_query_dict")
    return max(values)


def aria_vision_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    v = vision_config(cfg, source)
    layers = vision_dim(v, IDEFICS3_DEFAULTS, "num_hidden_layers", source)
    enc = navit(v, IDEFICS3_DEFAULTS, layers, source, post_norm=False, at="vision_tower")
    d, h = vision_dim(v, IDEFICS3_DEFAULTS, "hidden_size", source), text_hidden
    # (query; q/k/v_proj; MultiheadAttention's in_proj weight and bias, out_proj; linear;
    # the cross-attention's two LayerNorms and the projector's own)
    whole = _queries(cfg, source) * d + 3 * d * d + 3 * d * d + 3 * d + 2 * (d * d + d) + 6 * d
    split = d * h + h * h
    return VisionParams(enc.total + whole + split, enc.whole + whole, enc.heads, ("image",),
                        linears=enc.linears)
