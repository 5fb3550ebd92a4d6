"""DeepSeek-V4's buffers on a rank, as vLLM 0.33 builds them (`kvcore.models.buffers` routes
here): its RoPE caches and the top-k scratch its model allocates. No attention scales: its
layers are not vLLM's Attention (recorded: tests/data/deepseek_v4/answers.json,
`buffer_bytes_by_dtype`, 256 MiB of float32 for Flash).

RoPE (common/rope.py `build_deepseek_v4_rope`): a layer with a compressor (ratio > 1) takes the
``compress`` parameters at ``compress_rope_theta``, a sliding-only layer the ``main`` ones at
``rope_theta`` (transformers' DeepseekV4Config nests a flat dict as these two, its keys in
``compress``). Both become DeepseekV4ScalingRotaryEmbedding, whose float32 cache holds
``original_max_position_embeddings x factor`` rows of ``qk_rope_head_dim``: a ``compress``
set of another type than default keeps its YaRN factor and original length; the rest are
built at factor 1 over ``max_position_embeddings``. `get_rope` caches the object by its
parameters, so each distinct set is one cache, shared by its layers.

Scratch: DeepseekV4Model's ``topk_indices_buffer`` (max_num_batched_tokens x ``index_topk``,
int32), a plain tensor allocated on the GPU as the model is built, on every rank and stage.
"""

from __future__ import annotations

import math
from typing import Any

from kvcore.models.geometry import ModelGeometry
from kvcore.models.rope_cache import RopeCache

MAIN, COMPRESS = "main", "compress"     # (the RoPE roles; `RopeCache.kinds` holds them)
# DeepseekV4Config's defaults (transformers 5.20)
ROPE_THETA, COMPRESS_ROPE_THETA = 10000.0, 160000.0
TOPK_INDEX_BYTES = 4    # (int32)


def topk_scratch_bytes(batched_tokens: int, index_topk: int) -> int:
    """A sparse-attention model's (or MTP module's) ``topk_indices_buffer``: int32
    [max_num_batched_tokens, index_topk], allocated as it is built (DeepSeek-V3.2, GLM-5, V4)."""
    return batched_tokens * index_topk * TOPK_INDEX_BYTES


def _number(value: Any, default: float) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    return float(value) if ok else default


def _role_parameters(cfg: dict[str, Any], role: str) -> dict[str, Any]:
    """The ``main`` or ``compress`` RoPE set as DeepseekV4Config leaves it (a flat dict's keys
    go to ``compress``; ``main`` is then plain RoPE)."""
    rp = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    if not isinstance(rp, dict):
        rp = {}
    if isinstance(rp.get(MAIN), dict) and isinstance(rp.get(COMPRESS), dict):
        return dict(rp[role])
    flat = {k: v for k, v in rp.items() if k not in (MAIN, COMPRESS)}
    return dict(flat) if role == COMPRESS else {"rope_type": "default"}


def _cache(cfg: dict[str, Any], g: ModelGeometry, role: str) -> RopeCache:
    assert g.v4 is not None
    rp = _role_parameters(cfg, role)
    pos = g.max_position_embeddings
    kind = rp.get("rope_type", rp.get("type", "default"))
    theta = (_number(cfg.get("compress_rope_theta"), COMPRESS_ROPE_THETA) if role == COMPRESS
             else _number(cfg.get("rope_theta"), ROPE_THETA))
    if role == COMPRESS and kind != "default":    # (YaRN on the compressed layers only)
        original = _number(rp.get("original_max_position_embeddings"), pos)
        factor = _number(rp.get("factor"), 1)
        rows = math.ceil(original * factor)     # (torch.arange over original x factor)
        params = {**rp, "rope_type": "deepseek_yarn"}
    else:
        rows = pos
        params = {**rp, "rope_type": "deepseek_yarn", "factor": 1.0,
                  "original_max_position_embeddings": pos}
    params.update(rope_theta=theta, rope_dim=g.v4.qk_rope_head_dim)
    key = repr((g.head_dim, g.v4.qk_rope_head_dim, sorted(params.items(), key=str)))
    return RopeCache(rows, g.v4.qk_rope_head_dim, "float32", key, pos, None, (role,))


def v4_rope_caches(cfg: dict[str, Any], g: ModelGeometry) -> tuple[RopeCache, ...]:
    """The distinct RoPE caches (`RopeCache.kinds`: the roles sharing one) of config `cfg`."""
    assert g.v4 is not None
    roles = [r for r, used in ((MAIN, 1 in g.v4.compress_ratios),
                               (COMPRESS, any(x > 1 for x in g.v4.compress_ratios))) if used]
    out: dict[str, RopeCache] = {}
    for role in roles:
        c = _cache(cfg, g, role)
        out[c.key] = c._replace(kinds=(*out[c.key].kinds, role)) if c.key in out else c
    return tuple(out.values())


def v4_buffer_bytes(g: ModelGeometry, layers: range | None, batched_tokens: int) -> int:
    """The buffer bytes on a rank holding decoder `layers` (None: all): the RoPE caches its
    layers build, and the top-k scratch (`batched_tokens`: max_num_batched_tokens)."""
    assert g.v4 is not None
    ratios = [r for i, r in enumerate(g.v4.compress_ratios) if layers is None or i in layers]
    roles = {MAIN if r == 1 else COMPRESS for r in ratios}
    caches = sum(c.nbytes for c in g.rope_caches if roles & set(c.kinds))
    return caches + topk_scratch_bytes(batched_tokens, g.v4.index_topk)
