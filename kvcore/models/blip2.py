"""BLIP-2's vision tower, Q-Former and projection, as vLLM 0.33 builds them for
`Blip2ForConditionalGeneration` (blip2.py, blip.py) beside its decoder-only text model (OPT).

`BlipVisionModel`, every layer (so with its post LayerNorm): a class embedding, the patch
embedding (a biased Conv2d over 3 channels), (image_size / patch_size)^2 + 1 position rows;
each layer two LayerNorms, a QKVParallelLinear (biased where ``qkv_bias``), a biased
RowParallelLinear ``projection``, a biased ColumnParallelLinear fc1 and RowParallelLinear fc2.
`Blip2QFormerModel`, plain nn.Linear and nn.LayerNorm throughout, whole on every rank: a
LayerNorm, then each layer a self-attention (biased query/key/value and output dense, a
LayerNorm), a cross-attention every ``cross_attention_frequency`` layers from layer 0 (its key
and value from ``encoder_hidden_size``), and the query feed-forward (biased dense in and out, a
LayerNorm); ``query_tokens`` (num_query_tokens x Q-Former hidden) and ``language_projection``
(a biased nn.Linear to the text width), whole too; ``query_tokens`` is kept where vLLM skips
the tower (``--language-model-only``, the image limit 0). No buffers. The class does not take
``--mm-encoder-tp-mode data``. Checked per rank against vLLM's classes on the meta device
(tests/data/weights_census/mm_cohere/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.vision_keys import (
    VisionParams,
    tower_config,
    vision_config,
    vision_dim,
    vit_layer,
)

# transformers 5.20.2's Blip2VisionConfig, Blip2QFormerConfig and Blip2Config defaults
VISION_DEFAULTS = {"hidden_size": 1408, "intermediate_size": 6144, "num_hidden_layers": 39,
                   "num_attention_heads": 16, "image_size": 224, "patch_size": 14}
QFORMER_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                    "cross_attention_frequency": 2, "encoder_hidden_size": 1408}
TOP_DEFAULTS = {"num_query_tokens": 32}


def qformer_params(q: dict[str, Any], source: str, key_of: str = "qformer_config") -> int:
    """`Blip2QFormerModel`'s parameters for Q-Former config `q` (its LayerNorm and layers), all
    whole on every rank (Granite 4 Vision's window projectors build it too)."""

    def dim(key: str) -> int:
        return vision_dim(q, QFORMER_DEFAULTS, key, source, key_of=key_of)

    h, inter, e = dim("hidden_size"), dim("intermediate_size"), dim("encoder_hidden_size")
    every = dim("cross_attention_frequency")
    attention = 4 * (h * h + h) + 2 * h     # (query, key, value, output dense; LayerNorm)
    cross = 2 * (h * h + h) + 2 * (e * h + h) + 2 * h
    feed_forward = h * inter + inter + inter * h + h + 2 * h
    layers = dim("num_hidden_layers")
    crossed = (layers + every - 1) // every     # (layers 0, every, 2 x every, ...)
    return 2 * h + layers * (attention + feed_forward) + crossed * cross


def blip2_vision_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return vision_dim(v, VISION_DEFAULTS, key, source)

    d, inter, layers, p = (dim("hidden_size"), dim("intermediate_size"),
                           dim("num_hidden_layers"), dim("patch_size"))
    if d % dim("num_attention_heads"):
        raise InputError(f"{d} is not a multiple of vision_config.num_attention_heads "
                         f"{dim('num_attention_heads')} (vLLM's BlipAttention refuses it)",
                         path=source or None, field="vision_config.hidden_size")
    layer_whole, layer_split = vit_layer(d, inter)
    if v.get("qkv_bias", True) is False:
        layer_split -= 3 * d
    embeddings = d + 3 * p * p * d + d + ((dim("image_size") // p) ** 2 + 1) * d
    tower_whole = embeddings + layers * layer_whole + 2 * d
    q = tower_config(cfg, "qformer_config", source)
    q_hidden = vision_dim(q, QFORMER_DEFAULTS, "hidden_size", source, key_of="qformer_config")
    queries = vision_dim(cfg, TOP_DEFAULTS, "num_query_tokens", source, key_of="") * q_hidden
    whole = (tower_whole + qformer_params(q, source) + queries + q_hidden * text_hidden
             + text_hidden)
    # (query_tokens, a plain Parameter of the class, stays where vLLM skips the tower)
    return VisionParams(whole + layers * layer_split, whole, dim("num_attention_heads"),
                        ("image",), kept=queries)
