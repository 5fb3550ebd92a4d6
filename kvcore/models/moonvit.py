"""The vision tower and projector vLLM 0.33 builds for Kimi-VL
(`KimiVLForConditionalGeneration`: moonvit.py `MoonVitPretrainedModel`, kimi_vl.py
`KimiVLMultiModalProjector`) and Kimi-K2.5 (`KimiK25ForConditionalGeneration`: kimi_k25_vit.py
`MoonViT3dPretrainedModel`, `KimiK25MultiModalProjector`), loaded on the first pipeline stage,
in the model dtype (Kimi-VL builds neither with the checkpoint's quant_config; Kimi-K2.5
ignores a compressed-tensors one, its published checkpoint's, and casts both to the dtype).

* MoonViT: a biased Conv2d patch embedding and its learnt ``init_pos_emb_height`` x
  ``init_pos_emb_width`` position table, whole; ``num_hidden_layers`` layers of two LayerNorms
  (whole), a biased QKV and output projection and a biased two-linear MLP
  ``intermediate_size`` wide (split over TP, the row-parallel biases whole); a final LayerNorm.
  Its 2D rotary table is computed on first use, not at load: no buffer.
* The projector: a LayerNorm over the tower's width and two biased ReplicatedLinear on the
  width times the ``merge_kernel_size`` area (to itself, then to the text model's width),
  whole on every rank.
Kimi-K2.5's MoonViT3d is the same but for its keys (`k25_vision_params`): the position table
``pos_emb_height`` x ``pos_emb_width`` (or the legacy ``init_pos_emb_*``), a sin-cos
``time_weight`` buffer (``pos_emb_time`` x hidden, cast to the model dtype), the patch
convolution's bias (``patch_embed_proj_bias``), ``qkv_hidden_size`` (the attention's width),
``attn_bias`` and ``linear_bias``, ``norm_type`` (``rmsnorm``: weights alone), and the projector
``patchmergerv2`` (unbiased, an RMSNorm after it over the text width) beside ``patchmerger``.
Both classes take ``--mm-encoder-tp-mode data``; Kimi-K2.5's also falls back to it where TP
does not divide its heads (not modelled: kvcli refuses such a TP, as its 64-head text model
does for the published checkpoint). Checked per rank against vLLM's classes on the
meta device (tests/data/weights_census/glm_kimi_towers/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim, vit_layer

# vLLM 0.33's MoonViTConfig defaults (transformers_utils/configs/moonvit.py)
MOONVIT_DEFAULTS = {"patch_size": 14, "init_pos_emb_height": 64, "init_pos_emb_width": 64,
                    "num_attention_heads": 16, "num_hidden_layers": 27, "hidden_size": 1152,
                    "intermediate_size": 4304}


def _merge_area(v: dict[str, Any], source: str) -> int:
    x = v.get("merge_kernel_size")
    x = [2, 2] if x is None else x
    if not (isinstance(x, list) and len(x) == 2 and all(
            isinstance(i, int) and not isinstance(i, bool) and 1 <= i < 2**16 for i in x)):
        raise InputError(f"expected two integers >= 1, got {clipped(x)}", path=source or None,
                         field="vision_config.merge_kernel_size")
    return int(x[0] * x[1])


def kimi_vl_vision_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    """MoonViT and the projector of a Kimi-VL config."""
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return vision_dim(v, MOONVIT_DEFAULTS, key, source)

    d, inter, p = dim("hidden_size"), dim("intermediate_size"), dim("patch_size")
    layers, wide = dim("num_hidden_layers"), d * _merge_area(v, source)
    table = dim("init_pos_emb_height") * dim("init_pos_emb_width") * d
    layer_whole, layer_split = vit_layer(d, inter)
    projector = 2 * d + wide * wide + wide + wide * text_hidden + text_hidden
    whole = 3 * p * p * d + d + table + layers * layer_whole + 2 * d + projector
    return VisionParams(whole + layers * layer_split, whole, dim("num_attention_heads"),
                        ("image",), True, mlp_width=inter)


# transformers 5.20.2's Kimi_K25VisionConfig defaults, and the keys vLLM reads with getattr
K25_DEFAULTS = {**MOONVIT_DEFAULTS, "pos_emb_height": 64, "pos_emb_width": 64,
                "pos_emb_time": 4}
_K25_FLAGS = {"patch_embed_proj_bias": True, "attn_bias": True, "linear_bias": True}


def k25_vision_params(cfg: dict[str, Any], text_hidden: int, source: str,
                      dtype_bytes: int) -> VisionParams:
    """MoonViT3d and the projector of a Kimi-K2.5 config."""
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        legacy = key.replace("pos_emb_", "init_pos_emb_")     # (the hub's schema)
        if key != legacy and v.get(legacy) is not None:
            return vision_dim(v, K25_DEFAULTS, legacy, source)
        return vision_dim(v, K25_DEFAULTS, key, source)

    def flag(key: str) -> bool:
        return bool(v.get(key, _K25_FLAGS[key]))

    d, inter, p = dim("hidden_size"), dim("intermediate_size"), dim("patch_size")
    qkv = d if v.get("qkv_hidden_size") is None else vision_dim(v, {}, "qkv_hidden_size", source)
    layers, wide = dim("num_hidden_layers"), d * _merge_area(v, source)
    norm = d if v.get("norm_type") == "rmsnorm" else 2 * d
    ab, lb = flag("attn_bias"), flag("linear_bias")
    table = dim("pos_emb_height") * dim("pos_emb_width") * d
    layer_whole = 2 * norm + d * (ab + lb)      # (wo's and fc1's biases)
    layer_split = 3 * qkv * d + 3 * qkv * ab + qkv * d + d * inter + inter * lb + inter * d
    if v.get("mm_projector_type") == "patchmergerv2":
        projector = wide * wide + wide * text_hidden + text_hidden
    else:
        projector = 2 * d + wide * wide + wide + wide * text_hidden + text_hidden
    whole = (3 * p * p * d + d * flag("patch_embed_proj_bias") + table + layers * layer_whole
             + norm + projector)
    return VisionParams(whole + layers * layer_split, whole, dim("num_attention_heads"),
                        ("vision_chunk",), True, mlp_width=inter,
                        buffers=dim("pos_emb_time") * d * dtype_bytes)
