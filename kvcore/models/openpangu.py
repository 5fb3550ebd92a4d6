"""openPangu Ultra MoE (`PanguUltraMoEForCausalLM`, model_type pangu_ultra_moe; remote code, no
config class in transformers 5.20), as vLLM 0.33's openpangu.py builds it: DeepSeek-V3's
layers (MLA with the query bottleneck, first_k_dense_replace dense layers then routed and
shared experts) with two things of its own, read here. Its MTP module (OpenPanguMTP) is not
modelled (`kvcore.models.mtp_draft` refuses it by name)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PANGU_ULTRA_MOE = "pangu_ultra_moe"


def pangu_fields(get: Callable[..., Any], moe_layers: tuple[bool, ...]) -> dict[str, Any]:
    """``sandwich_norm``: a pre- and post-feed-forward RMSNorm beside the two every layer has
    (OpenPanguDecoderLayer); ``router_enable_expert_bias``: the router's float32
    e_score_correction_bias (OpenPanguMoE), where DeepSeek reads ``topk_method``; the MoE
    layers (`moe_layers`, as DeepSeek's read them): every one from ``first_k_dense_replace`` on,
    OpenPanguDecoderLayer reading no ``moe_layer_freq`` (weights_census/openpangu's
    tiny-pangu-ultra-moe-layer-freq)."""
    first = get("first_k_dense_replace")
    if isinstance(first, int) and any(moe_layers):
        moe_layers = tuple(i >= first for i in range(len(moe_layers)))
    return {"sandwich_norms": bool(get("sandwich_norm", False)),
            "router_score_bias": bool(get("router_enable_expert_bias", False)),
            "moe_layers": moe_layers}


def pangu_rope_keys(c: dict[str, Any]) -> dict[str, Any]:
    """The config as its RoPE cache reads it: OpenPanguMLAAttention builds deepseek_yarn with
    factor 1 and mscale 1 over max_position_embeddings whatever ``rope_scaling`` says (one
    plain-sized cache; weights_census/openpangu's tiny-pangu-ultra-moe-yarn), keeping only the
    theta."""
    return {k: v for k, v in c.items() if k not in ("rope_scaling", "rope_parameters")}
