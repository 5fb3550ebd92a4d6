"""Arcee's AFMoE (`AfmoeForCausalLM`, ``model_type`` afmoe; vLLM 0.33's afmoe.py) as vLLM
builds its weights, which the common keys do not say: attention unbiased whatever
``attention_bias`` says, with a sigmoid output gate (``gate_proj``, as wide as the queries,
beside the QKV projection: `ModelGeometry.attention_output_gate`) and q/k norms; four norms a
layer (before and after attention and the feed-forward); a dense MLP in the first
``num_dense_layers`` layers (1, transformers' AfmoeConfig default), experts after, their
router and its ``expert_bias`` float32 (`kvcore.models.rank_params.FP32_ROUTERS`),
``num_shared_experts`` (2 by default) of ``moe_intermediate_size`` as one shared MLP. Found by
tests/data/size_fuzz: kvcli had sized it as a plain MoE decoder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

AFMOE = "afmoe"


def afmoe_fields(get_int: Callable[..., Any], n_layers: int, experts: int) -> dict[str, Any]:
    dense = get_int("num_dense_layers", 1) or 0
    return {"moe_layers": tuple(experts > 0 and i >= dense for i in range(n_layers)),
            "num_shared_experts": get_int("num_shared_experts", 2) or 0,
            "attention_bias": False, "qk_norm": True, "sandwich_norms": True}
