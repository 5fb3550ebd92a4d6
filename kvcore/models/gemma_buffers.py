"""Gemma 3n's and Gemma 4's buffers on a rank, beside the attention layers' scales
(`kvcore.models.buffers`), as their vLLM 0.33 classes hold them (checked against them on the
meta device: tests/data/weights_gemma/answers.json, `buffer_bytes_by_dtype`).

- One RoPE cache per distinct (layer type's RoPE parameters, head size): each layer calls
  `get_rope(head_dim, max_position_embeddings, rope_parameters[layer_type])`, Gemma 3n's two
  (sliding at 10,000, full at 1,000,000), Gemma 4's sliding one and one per head size of its
  full layers. Rows: ``max_position_embeddings``; width: the rotary dim, the whole head for
  Gemma 4's ``proportional`` RoPE (its cache spans the head; the partial factor zeroes the
  rest). A config without per-type parameters (the older format): ``rope_theta`` on the full
  layers, ``rope_local_base_freq`` on the sliding ones.
- Scalars in the model dtype: four (the embedding's and the per-layer inputs' scales; one
  without per-layer embeddings), one a layer (Gemma 4's ``layer_scalar``, Gemma 3n's AltUp
  router input scale) and one a MoE router.
"""

from __future__ import annotations

from typing import Any

from kvcore.models.geometry import ModelGeometry
from kvcore.models.rope_cache import RopeCache
from kvcore.specs import DTYPE_BYTES

_TYPES = {"sliding": "sliding_attention", "full": "full_attention"}
_LEGACY = {"sliding": ("rope_local_base_freq", 10_000.0), "full": ("rope_theta", 1_000_000.0)}


def _parameters(cfg: dict[str, Any], kind: str, get: Any) -> dict[str, Any]:
    rp = cfg.get("rope_parameters")
    if isinstance(rp, dict) and isinstance(rp.get(_TYPES[kind]), dict):
        return rp[_TYPES[kind]]
    key, default = _LEGACY[kind]
    return {"rope_type": "default", "rope_theta": get(key, default)}


def gemma_rope_caches(cfg: dict[str, Any], g: ModelGeometry, get: Any) -> tuple[RopeCache, ...]:
    pos = g.max_position_embeddings
    out: dict[str, RopeCache] = {}
    for i, kind in enumerate(g.layer_kinds):
        rp = _parameters(cfg, kind, get)
        head = g.layer_dims[i][1] if g.layer_dims else g.head_dim
        partial = rp.get("partial_rotary_factor", 1.0)
        dim = head if rp.get("rope_type") == "proportional" else int(head * min(partial, 1))
        key = repr((head, dim, sorted(rp.items())))
        out.setdefault(key, RopeCache(pos, dim, g.dtype, key, pos, 1.0))
    return tuple(out.values())


def gemma_scalars(g: ModelGeometry) -> int:
    moe = g.num_layers if g.num_experts else 0      # (a MoE router's root size a layer)
    # (the per-layer inputs' three scales only with per-layer embeddings: Gemma 4 Unified's
    # text model has none, and vLLM registers None, no buffer)
    ple = 3 if g.gemma is not None and g.gemma.per_layer_width else 0
    return (1 + ple + g.num_layers + moe) * DTYPE_BYTES[g.dtype]
