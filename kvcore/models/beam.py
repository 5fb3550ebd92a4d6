"""Beam (`BeamForCausalLM`, ``model_type`` beam; vLLM 0.33's models/beam/nvidia/) as vLLM builds
its weights, which the common keys do not say: attention unbiased, with q/k norms a head wide
and a sigmoid output gate as wide as the queries (merged into the QKV projection or a linear of
its own: the same parameters, `ModelGeometry.attention_output_gate`) plus the gate's bias, one a
query head (split over TP); four norms a layer (before and after attention and the
feed-forward); a dense MLP where ``mlp_layer_types`` says ``dense``, experts where ``sparse``
(every layer by BeamConfig's default), no shared expert, the router and its
``e_score_correction_bias`` float32 (`kvcore.models.rank_params.FP32_ROUTERS`); never tied
(a tied head is refused: `kvcore.models.class_tie`). Found by tests/data/size_fuzz: kvcli had
sized it as a plain MoE decoder."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError

BEAM = "beam"


def beam_fields(c: dict[str, Any], n_layers: int, experts: int,
                source: str) -> dict[str, Any]:
    types = c.get("mlp_layer_types")
    if types is None:       # (BeamConfig: every layer sparse)
        types = ["sparse"] * n_layers
    if not isinstance(types, list) or len(types) != n_layers \
            or any(t not in ("dense", "sparse") for t in types):
        raise InputError(f"expected a list of {n_layers} 'dense' or 'sparse' (BeamConfig "
                         "refuses it)", path=source or None, field="mlp_layer_types")
    return {"moe_layers": tuple(experts > 0 and t == "sparse" for t in types),
            "num_shared_experts": 0, "attention_bias": False, "qk_norm": True,
            "sandwich_norms": True}
