"""Ovis's (Ovis1.6, Ovis2) visual tokenizer and visual embedding table, as vLLM 0.33 builds them
for `Ovis` (ovis.py, aimv2.py, siglip.py) beside the ``llm_config`` text model (Qwen2, Gemma 2,
Llama: vLLM looks the image pad token up by that type and knows no other).

``visual_tokenizer_config.backbone_config`` (its ``depths`` unread: vLLM builds the backbone's
own ``num_hidden_layers``): an ``aimv2`` backbone (transformers' Aimv2VisionConfig) is
`AIMv2Model` without its post norm: a biased Conv2d patch embedding, an RMSNorm and
(image / p)^2 position rows; each block an RMSNorm before the attention and one before the
MLP, a QKV (``qkv_bias``) and row-parallel ``proj`` (``mlp_bias``), a gated ``fc13``
(two ``intermediate_size`` halves, ``mlp_bias``) and a row-parallel ``fc2`` (``mlp_bias``). A
``siglip_vision_model`` backbone is SigLIP's encoder with its post LayerNorm and no pooling
head (`kvcore.models.clip_siglip`). The head, whole on every rank: a bias-free
ReplicatedLinear from d x ``hidden_stride``^2 to ``vocab_size`` - 5 (the indicator tokens) and
a LayerNorm over it; the visual embedding table is ``vocab_size`` x the top-level
``hidden_size``. TP splits the encoder's QKV, proj and MLP and their column-parallel biases,
and the heads (vLLM asserts they divide). No ``--mm-encoder-tp-mode data`` (falls back).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.clip_siglip import SIGLIP_DEFAULTS, encoder
from kvcore.models.vision_keys import (
    VisionLinear,
    VisionParams,
    config_int,
    tower_config,
    vision_dim,
)

OVIS_TEXT_TYPES = ("gemma2", "llama", "qwen2")      # (ovis.py's IMAGE_PAD_TOKEN_ID_MAP)
INDICATOR_TOKENS = 5                                # (ovis.py's IMAGE_INDICATOR_IDS)
# transformers 5.20.2's Aimv2VisionConfig defaults
AIMV2_DEFAULTS = {"hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 24,
                  "num_attention_heads": 8, "num_channels": 3, "image_size": 224,
                  "patch_size": 14}
BACKBONES = {"aimv2_visual_tokenizer": "aimv2", "siglip_visual_tokenizer": "siglip_vision_model"}


def ovis_params(cfg: dict[str, Any], source: str) -> VisionParams:
    text_type = (cfg.get("llm_config") or {}).get("model_type")
    if text_type not in OVIS_TEXT_TYPES:
        raise InputError(f"{clipped(text_type)}: vLLM's Ovis knows the image pad token of "
                         f"{', '.join(OVIS_TEXT_TYPES)} text models only",
                         path=source or None, field="llm_config.model_type")
    t = tower_config(cfg, "visual_tokenizer_config", source)
    kind = t.get("model_type")
    backbone = tower_config(t, "backbone_config", source)
    # (a dict or list was looked up in the table: unhashable, a traceback)
    if (not isinstance(kind, str) or kind not in BACKBONES
            or backbone.get("model_type", BACKBONES[kind]) != BACKBONES[kind]):
        raise InputError(f"{clipped(kind)} with a {clipped(backbone.get('model_type'))} "
                         "backbone: vLLM's Ovis builds an aimv2 or a siglip_vision_model one "
                         "under its visual tokenizer", path=source or None,
                         field="visual_tokenizer_config.model_type")
    if kind == "aimv2_visual_tokenizer":
        tower = aimv2_encoder(backbone, source)
    else:
        layers = vision_dim(backbone, SIGLIP_DEFAULTS, "num_hidden_layers", source,
                            key_of="visual_tokenizer_config.backbone_config")
        tower = encoder("siglip", backbone, SIGLIP_DEFAULTS, layers, True, source)
    d = vision_dim(backbone, AIMV2_DEFAULTS if kind == "aimv2_visual_tokenizer"
                   else SIGLIP_DEFAULTS, "hidden_size", source)
    stride = config_int(t, "hidden_stride", 1, "visual_tokenizer_config.hidden_stride", source)
    vocab = config_int(t, "vocab_size", 16384, "visual_tokenizer_config.vocab_size", source,
                       INDICATOR_TOKENS + 1)
    head_width = vocab - INDICATOR_TOKENS
    extra = d * stride * stride * head_width + 2 * head_width + vocab * config_int(
        cfg, "hidden_size", None, "hidden_size", source)
    return tower._replace(total=tower.total + extra, whole=tower.whole + extra,
                          modalities=("image",))


def aimv2_encoder(v: dict[str, Any], source: str) -> VisionParams:
    """AIMv2's encoder without its post norm (`AIMv2Model`, ``require_post_norm=False``)."""

    def dim(key: str) -> int:
        return vision_dim(v, AIMV2_DEFAULTS, key, source,
                          key_of="visual_tokenizer_config.backbone_config")

    d, inter, layers, p = (dim("hidden_size"), dim("intermediate_size"),
                           dim("num_hidden_layers"), dim("patch_size"))
    qkv_bias, mlp_bias = v.get("qkv_bias") is True, v.get("mlp_bias") is True
    embeddings = dim("num_channels") * p * p * d + d + d + (dim("image_size") // p) ** 2 * d
    layer_whole = 2 * d + (2 * d if mlp_bias else 0)
    layer_split = 3 * d * d + d * d + 3 * inter * d + (3 * d if qkv_bias else 0) + (
        2 * inter if mlp_bias else 0)
    whole = embeddings + layers * layer_whole
    at = "visual_tokenizer.backbone.trunk.blocks"
    linears: list[VisionLinear] = []
    for i in range(layers):
        linears += [VisionLinear(f"{at}.{i}.attn.qkv", (d, d, d), d, "column",
                                 ("q", "k", "v")),
                    VisionLinear(f"{at}.{i}.attn.proj", (d,), d, "row"),
                    VisionLinear(f"{at}.{i}.mlp.fc13", (inter, inter), d, "column",
                                 ("fc1", "fc3")),
                    VisionLinear(f"{at}.{i}.mlp.fc2", (d,), inter, "row")]
    return VisionParams(whole + layers * layer_split, whole, dim("num_attention_heads"),
                        linears=tuple(linears))
