"""Poolside's Laguna (`LagunaForCausalLM`, ``model_type`` laguna; vLLM 0.33's laguna.py) as vLLM
builds its weights, which the common keys do not say: each layer's own query heads
(``num_attention_heads_per_layer``, Laguna-XS's; the KV heads are the config's), a MoE block
where ``mlp_layer_types`` says ``sparse`` (transformers' LagunaConfig fills in a dense first
layer and sparse ones after), its router in the model dtype beside a float32
``e_score_correction_bias``, q/k norms, and the output gate ``g_proj`` (``gating``: true or
"per-head" one output a query head, any other true value one a head's channel). Found by
tests/data/size_fuzz: kvcli had sized a plain MoE decoder. ``swa_attention_sink_enabled``
gives each sliding layer's attention a learned sink logit a query head (laguna.py's
``make_attention_sink``: the rank's heads, in the model dtype); the KV specs are unchanged
(tests/data/weights_census/unread_keys/, where kvcli had counted none)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvcore.errors import InputError

LAGUNA = "laguna"


def _per_layer(c: dict[str, Any], key: str, n: int, ok: Callable[[Any], bool], default: list,
               what: str, source: str) -> list:
    given = c.get(key)
    if given is None:
        return default
    if not isinstance(given, list) or len(given) != n or not all(ok(x) for x in given):
        raise InputError(f"expected a list of {n} (num_hidden_layers) {what}",
                         path=source or None, field=key)
    return given


def laguna_fields(c: dict[str, Any], n: int, heads: int, head_dim: int, experts: int,
                  kinds: tuple[str, ...], source: str) -> dict[str, Any]:
    layer_heads = _per_layer(c, "num_attention_heads_per_layer", n,
                             lambda x: type(x) is int and x > 0, [heads] * n,
                             "positive integers", source)
    mlp = _per_layer(c, "mlp_layer_types", n, lambda x: x in ("dense", "sparse"),
                     ["dense"] + ["sparse"] * (n - 1), "of dense, sparse", source)
    gating = c.get("gating", True)
    gate = 0 if not gating else 1 if gating is True or gating == "per-head" else head_dim
    # (a layer is sliding by its ``layer_types`` entry, whatever the window; vLLM reads the
    # sink key with getattr(..., False) and tests its truth)
    types = c.get("layer_types")
    sliding = ([t == "sliding_attention" for t in types] if isinstance(types, list)
               and len(types) == n else [k == "sliding" for k in kinds])
    sinks = bool(c.get("swa_attention_sink_enabled", False))
    return {"layer_heads": tuple(layer_heads), "sink_layers": tuple(sinks and s for s in sliding),
            "moe_layers": tuple(t == "sparse" and experts > 0 for t in mlp),
            "qk_norm": True, "router_score_bias": True, "head_gate_width": gate}
