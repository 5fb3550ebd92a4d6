"""Gemma 4's vision and audio towers, as vLLM 0.33 builds them for
`Gemma4ForConditionalGeneration` (gemma4_mm.py), and Gemma 4 Unified's embedders
(`unified_embedders`), beside the text model
(`kvcore.models.gemma_weights`): transformers' `Gemma4VisionModel` and `Gemma4AudioModel`
(``AutoModel.from_config``), their nn.Linear layers swapped for vLLM's ReplicatedLinear, so
whole on every TP rank, in the model dtype.

* Vision (images and video frames): a patch projection (3 p^2 -> d, no bias) and a position
  table (2 x ``position_embedding_size`` x d); ``num_hidden_layers`` layers, each q/k/v/o
  projections (``num_attention_heads`` / ``num_key_value_heads`` x ``head_dim``), q and k norms
  a head wide, a gated MLP and four norms. Buffers: the axial RoPE's two float32 frequency
  tables, ``standardize``'s bias and scale, ``use_clipped_linears``' four bounds a linear.
* Audio (only with an ``audio_config``): two Conv2d (3 x 3) blocks with LayerNorms, the input
  projection, ``num_hidden_layers`` Conformer layers (two 4x feed-forwards, attention with a
  relative key projection and a per-dim scale, a light 1-D convolution, seven norms), and a
  biased output projection to ``output_proj_dims``.
* Each tower's `Gemma4MultimodalEmbedder`: one projection to the text width (a weightless norm).
Without a ``vision_config`` vLLM cannot build the class (it reads the tower's hidden_size).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.gemma3n_towers import gemma3n_towers
from kvcore.models.vision_keys import TowerPart, VisionParams, tower_config, vision_dim
from kvcore.specs import DTYPE_BYTES

# transformers 5.20.2's Gemma4VisionConfig / Gemma4AudioConfig defaults
VISION_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 16,
                   "num_attention_heads": 12, "num_key_value_heads": 12, "head_dim": 64,
                   "patch_size": 16, "position_embedding_size": 10 * 1024}
AUDIO_DEFAULTS = {"hidden_size": 1024, "num_hidden_layers": 12, "num_attention_heads": 8,
                  "conv_kernel_size": 5, "output_proj_dims": 1536}
CHANNELS = [128, 32]
UNIFIED_DEFAULTS = {"patch_size": 16, "pooling_kernel_size": 3, "mm_embed_dim": 3840,
                    "mm_posemb_size": 1120, "output_proj_dims": 3840}


def multimodal_towers(cfg: dict[str, Any], arch: str, text_hidden: int, dtype: str,
                      source: str) -> VisionParams | None:
    """Gemma 3n's or Gemma 4's towers for their multimodal classes (None for another)."""
    if arch == "Gemma3nForConditionalGeneration":
        return gemma3n_towers(cfg, text_hidden, dtype, source)
    if arch == "Gemma4ForConditionalGeneration":
        return gemma4_towers(cfg, text_hidden, dtype, source)
    if arch == "Gemma4UnifiedForConditionalGeneration":
        return unified_embedders(cfg, text_hidden, source)
    return None


def gemma4_towers(cfg: dict[str, Any], text_hidden: int, dtype: str,
                  source: str) -> VisionParams:
    if not isinstance(cfg.get("vision_config"), dict):
        raise InputError("vLLM's Gemma4ForConditionalGeneration reads its vision tower's sizes "
                         "and cannot be built without one", path=source or None,
                         field="vision_config")
    parts = [_vision(cfg, text_hidden, dtype, source)]
    if cfg.get("audio_config") is not None:
        parts.append(_audio(cfg, text_hidden, dtype, source))
    total = sum(p.total for p in parts)
    modalities = tuple(m for p in parts for m in p.modalities)
    return VisionParams(total, total, 0, modalities, False, (), tuple(parts))


def unified_embedders(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    """Gemma 4 Unified (gemma4_unified.py): no tower; an encoder-free patch embedder (a
    LayerNorm over 3 (p k)^2 pixels, p the patch and k the pooling kernel, a biased
    column-parallel projection to ``mm_embed_dim`` split by TP, two LayerNorms and a
    ``mm_posemb_size`` x 2 position table) and Gemma 4's embedders (``output_proj_dims`` ->
    text; audio: ``audio_embed_dim``), all built whatever the limits."""
    if not isinstance(cfg.get("vision_config"), dict):
        raise InputError("vLLM's Gemma4UnifiedForConditionalGeneration refuses to start "
                         "without one ('Gemma4 Unified requires a vision configuration')",
                         path=source or None, field="vision_config")
    v = tower_config(cfg, "vision_config", source)

    def dim(key: str) -> int:
        return vision_dim(v, UNIFIED_DEFAULTS, key, source)

    pixels = 3 * (dim("patch_size") * dim("pooling_kernel_size")) ** 2
    e = dim("mm_embed_dim")
    split = pixels * e + e
    whole = 2 * pixels + 4 * e + 2 * dim("mm_posemb_size") * e
    whole += dim("output_proj_dims") * text_hidden
    if cfg.get("audio_config") is not None:
        a = tower_config(cfg, "audio_config", source)
        whole += vision_dim(a, {"audio_embed_dim": 640}, "audio_embed_dim", source,
                            key_of="audio_config") * text_hidden
    return VisionParams(whole + split, whole, 0, ("image", "video", "audio"), False, (),
                        (TowerPart((), whole + split, whole, 0),))


def _clipped(t: dict[str, Any], default: bool) -> bool:
    return bool(t.get("use_clipped_linears", default))


def _vision(cfg: dict[str, Any], text_hidden: int, dtype: str, source: str) -> TowerPart:
    v = tower_config(cfg, "vision_config", source)

    def dim(key: str) -> int:
        return vision_dim(v, VISION_DEFAULTS, key, source)

    d, inter, layers, p = (dim("hidden_size"), dim("intermediate_size"),
                           dim("num_hidden_layers"), dim("patch_size"))
    q, kv, head = dim("num_attention_heads"), dim("num_key_value_heads"), dim("head_dim")
    layer = 2 * d * head * (q + kv) + 2 * head + 3 * d * inter + 4 * d
    n = 3 * p * p * d + 2 * dim("position_embedding_size") * d + layers * layer
    n += d * text_hidden                                         # embed_vision
    size = DTYPE_BYTES[dtype]
    buffers = 2 * 4 * -(-(head // 2) // 2)                       # inv_freq and its copy
    buffers += 2 * d * size if v.get("standardize") else 0
    buffers += layers * 7 * 4 * size if _clipped(v, False) else 0
    return TowerPart(("image", "video"), n, n, buffers)


def _audio(cfg: dict[str, Any], text_hidden: int, dtype: str, source: str) -> TowerPart:
    a = tower_config(cfg, "audio_config", source)

    def dim(key: str) -> int:
        return vision_dim(a, AUDIO_DEFAULTS, key, source, key_of="audio_config")

    h, layers, heads = dim("hidden_size"), dim("num_hidden_layers"), dim("num_attention_heads")
    head, out = h // heads, dim("output_proj_dims")
    proj = heads * head
    c0, c1 = _channels(a, source)
    sub = 9 * c0 + c0 + 9 * c0 * c1 + c1 + (c0 // 4) * c1 * h
    layer = (2 * (8 * h * h + 2 * h)                             # two feed-forwards
             + 4 * h * proj + h * h + head                       # q/k/v/relative k, post
             + 3 * h * h + dim("conv_kernel_size") * h + 2 * h   # light conv
             + 3 * h)                                            # the layer's norms
    n = sub + layers * layer + h * out + out + out * text_hidden     # (embed_audio)
    size = DTYPE_BYTES[dtype]
    buffers = layers * size + (h // 2) * size    # softcaps, inverse timescales
    buffers += layers * 10 * 4 * size if _clipped(a, True) else 0
    return TowerPart(("audio",), n, n, buffers)


def _channels(a: dict[str, Any], source: str) -> tuple[int, int]:
    c = a.get("subsampling_conv_channels") or CHANNELS
    if (not isinstance(c, list) or len(c) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in c)):
        raise InputError(f"expected two channel counts, got {c!r}", path=source or None,
                         field="audio_config.subsampling_conv_channels")
    return c[0], c[1]
