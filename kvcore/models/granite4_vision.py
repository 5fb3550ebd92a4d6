"""Granite 4 Vision's vision tower and projectors, as vLLM 0.33 builds them for
`Granite4VisionForConditionalGeneration` (granite4_vision.py) beside its Granite text model.

The tower: the whole SigLIP encoder (every layer: the deepstack reads them all) without its
post LayerNorm (`kvcore.models.clip_siglip`), split over TP as SigLIP's is. ``image_newline``
(text hidden, a plain Parameter: kept where vLLM skips the tower). One
`WindowQFormerDownsampler` per ``deepstack_layer_map`` entry and four spatial ones, each whole
on every rank: a one-layer Q-Former as wide as the vision tower (`kvcore.models.blip2`:
MLP 3,072, cross-attention from the tower's width), a LayerNorm, ``query`` (q^2 rows of
``downsample_rate`` "q/w"), ``image_positions`` (w^2 rows) and a biased nn.Linear to the text
width. Beside them the class allocates one max_num_batched_tokens x text hidden scratch a
deepstack level (the map's entries and ``spatial_target_layers``), whatever the limits
(`VisionParams.deepstack`). Not ``--mm-encoder-tp-mode data``. Checked per rank against
vLLM's classes on the meta device (tests/data/weights_census/mm_cohere/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.blip2 import qformer_params
from kvcore.models.clip_siglip import SIGLIP_DEFAULTS, encoder
from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim

_SPATIAL = [12, 15, 18, 21]     # (Granite4VisionConfig's spatial_target_layers default)


def _listed(cfg: dict[str, Any], key: str, default: list[Any] | None, source: str) -> int:
    """How many entries ``cfg[key]`` lists (vLLM takes its len: null fails)."""
    x = cfg.get(key, default)
    if not isinstance(x, list):
        raise InputError(f"expected a list, got {clipped(x)}: vLLM 0.33's Granite 4 Vision "
                         "takes its length", path=source or None, field=key)
    return len(x)


def _pairs(cfg: dict[str, Any], source: str) -> int:
    """How many [vision layer, text layer] pairs ``deepstack_layer_map`` lists (vLLM unpacks
    each into two in its __init__: anything else fails there)."""
    n = _listed(cfg, "deepstack_layer_map", None, source)
    for pair in cfg["deepstack_layer_map"]:
        if not (isinstance(pair, list) and len(pair) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in pair)):
            raise InputError(f"expected a list of [vision layer, text layer] pairs of "
                             f"integers, got an entry {clipped(pair)}", path=source or None,
                             field="deepstack_layer_map")
    return n


def _rate(cfg: dict[str, Any], source: str) -> tuple[int, int]:
    """``downsample_rate`` "q/w": the query side and window side."""
    x = cfg.get("downsample_rate")
    parts = x.split("/") if isinstance(x, str) else []
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise InputError(f"expected a fraction \"q/w\" of integers >= 1, got {clipped(x)}",
                         path=source or None, field="downsample_rate")
    return int(parts[0]), int(parts[1])


def granite4_vision_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    v = vision_config(cfg, source)
    layers = vision_dim(v, SIGLIP_DEFAULTS, "num_hidden_layers", source)
    enc = encoder("siglip", v, SIGLIP_DEFAULTS, layers, False, source)
    d, h = vision_dim(v, SIGLIP_DEFAULTS, "hidden_size", source), text_hidden
    q_side, w_side = _rate(cfg, source)
    deep, spatial = _pairs(cfg, source), _listed(
        cfg, "spatial_target_layers", _SPATIAL, source)
    qformer = qformer_params({"hidden_size": d, "intermediate_size": 3072,
                              "num_hidden_layers": 1, "cross_attention_frequency": 1,
                              "encoder_hidden_size": d}, source, key_of="vision_config")
    projector = qformer + 2 * d + (q_side ** 2 + w_side ** 2) * d + d * h + h
    whole = (deep + 4) * projector + h
    return VisionParams(enc.total + whole, enc.whole + whole, enc.heads, ("image",),
                        linears=enc.linears, kept=h, buffers=enc.buffers,
                        deepstack=deep + spatial)
