"""Step-3.5 (`step3p5`, vLLM 0.33's step3p5.py, its config class transformers' Step3p7TextConfig)
as vLLM builds it, for the weights estimate: the MoE layers ``mlp_layer_types`` marks sparse
(else the hub configs' ``moe_layers_enum``, else layers 3 on), each with a float32 router and
a float32 ``router_bias`` (vLLM asserts both ``need_fp32_gate`` and ``use_moe_router_bias``)
and a shared expert ``share_expert_dim`` wide, the rest a dense MLP; q and k norms every layer;
the sliding layers' own query-head count (``num_sliding_attention_heads``, else the hub configs'
``attention_other_setting``); a head-wise output gate (``g_proj``, column-parallel, one output
a head) where ``use_head_wise_attn_gate``; its own LM head. The per-layer lists of a hub config
padded with its ``num_nextn_predict_layers`` MTP layers are read to ``num_hidden_layers``, as
the class trims them. Checked on the meta device, every rank (tests/data/weights_census/
mm_step3/step3p5/; quantised in quant_step3/: every linear (g_proj too), the experts and the
attention's scales take the quant_config, the float32 router not); on pipeline stages in
step3_pp/ (a stage without a MoE layer refused: `kvcore.models.step3.stage_refusal`). Not
modelled, refused by name: the methods `kvcore.models.step3.unsized_quant` names.
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models import rank_params as rp
from kvcore.models.geometry import ModelGeometry
from kvcore.models.rank_params import Ledger

STEP3P5 = "step3p5"


def hub_trimmed(out: dict[str, Any]) -> dict[str, Any]:
    """A hub config's per-layer lists padded with its ``num_nextn_predict_layers`` MTP layers,
    cut to ``num_hidden_layers`` as Step3p7TextConfig cuts them, the rest moved to its
    ``mtp_layer_types`` / ``mtp_mlp_layer_types`` (the MTP draft's layers) unless given."""
    n, mtp = out.get("num_hidden_layers"), out.get("num_nextn_predict_layers")
    if isinstance(n, int) and isinstance(mtp, int) and mtp > 0:
        for key in ("layer_types", "mlp_layer_types"):
            if isinstance(out.get(key), list) and len(out[key]) == n + mtp:
                out.setdefault(f"mtp_{key}", out[key][n:])
                out[key] = out[key][:n]
    return out


def mtp_fields(c: dict[str, Any], n: int, heads: tuple[int, int]) -> dict[str, Any]:
    """The MTP layers' kinds, MoE flags and query heads (`heads`: a full layer's, a sliding
    one's) of layers n, n + 1, ..., as step3p5.py reads them:
    the kinds from mtp_layer_types; MoE from mtp_mlp_layer_types beside mlp_layer_types, else
    from moe_layers_enum (else none: ``0 < i < num_hidden_layers``). Where a config names no
    MTP layer kinds, none (its draft refused, `kvcore.models.mtp_step3p5`)."""
    kinds = c.get("mtp_layer_types")
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        return {}
    mlp = c.get("mtp_mlp_layer_types")
    if isinstance(c.get("mlp_layer_types"), list):
        moe = [isinstance(mlp, list) and i < len(mlp) and mlp[i] == "sparse"
               for i in range(len(kinds))]
    elif isinstance(enum := c.get("moe_layers_enum"), str):
        listed = {int(i) for i in enum.split(",") if i.strip().isdigit()}
        moe = [n + i in listed for i in range(len(kinds))]
    else:
        moe = [False] * len(kinds)
    sliding = tuple(k == "sliding_attention" for k in kinds)
    return {"mtp_layer_kinds": tuple("sliding" if s else "full" for s in sliding),
            "mtp_moe_layers": tuple(moe), "mtp_layer_heads": tuple(heads[s] for s in sliding)}


def step3p5_fields(c: dict[str, Any], get_dim, kinds: tuple[str, ...], heads: int,
                   unsized: str, source: str) -> dict[str, Any]:
    """The geometry's Step-3.5 parts: MoE layers, shared expert width, per-layer query heads."""
    for key in ("need_fp32_gate", "use_moe_router_bias"):
        if c.get(key) is not True:      # (step3p5.py asserts them; the class defaults neither)
            raise InputError(f"expected true, got {clipped(c.get(key))}: vLLM 0.33's "
                             "step3p5.py asserts it", path=source or None, field=key)
    n = len(kinds)
    types = c.get("mlp_layer_types")
    if isinstance(types, list):
        moe = tuple(i < len(types) and types[i] == "sparse" for i in range(n))
    elif (enum := c.get("moe_layers_enum")) is not None:
        try:
            items = enum.split(",") if isinstance(enum, str) else enum
            listed = {int(i) for i in items if str(i).strip()}
        except (AttributeError, TypeError, ValueError):
            raise InputError(f"expected comma-separated layer indices, got {clipped(enum)}",
                             path=source or None, field="moe_layers_enum") from None
        moe = tuple(i in listed for i in range(n))
    else:
        moe = tuple(i >= 3 for i in range(n))
    sliding, field = _sliding_heads(c, heads, source)
    if not isinstance(sliding, int) or isinstance(sliding, bool) or sliding < 1:
        raise InputError(f"expected an integer >= 1, got {clipped(sliding)}",
                         path=source or None, field=field)
    width = c.get("share_expert_dim", c.get("share_expert_dims"))
    return {"moe_layers": moe, "qk_norm": True,
            "shared_expert_width": get_dim("share_expert_dim", width or 1280),
            "layer_heads": tuple(sliding if k == "sliding" else heads for k in kinds),
            "head_gate": bool(c.get("use_head_wise_attn_gate", False)),
            **mtp_fields(c, n, (heads, sliding)),
            "weights_unmodelled": unsized}


def _sliding_heads(c: dict[str, Any], heads: int, source: str) -> tuple[Any, str]:
    """(the sliding layers' query heads as written, the key that gave them), as step3p5.py's
    _get_num_attention_heads reads them: num_sliding_attention_heads, else the remote-code
    attention_other_setting's where its attention_type is "sliding_attention" (a setting that
    is no object fails its .get), else num_attention_heads."""
    if c.get("num_sliding_attention_heads"):
        return c["num_sliding_attention_heads"], "num_sliding_attention_heads"
    other = c.get("attention_other_setting") or {}
    if not isinstance(other, dict):
        raise InputError(f"must be an object, got {clipped(other)}: vLLM's step3p5.py reads "
                         "the sliding layers' heads from it", path=source or None,
                         field="attention_other_setting")
    if other.get("attention_type") == "sliding_attention":
        return (other.get("num_attention_heads"),
                "attention_other_setting.num_attention_heads")
    return heads, "num_attention_heads"


def step3p5_ledger(g: ModelGeometry, tp: int, layers: range | None = None, first: bool = True,
                   last: bool = True) -> Ledger:
    """One of ``tp`` ranks' parameters: the decoder `layers` (None: all), the embedding where
    `first`, the LM head and final norm where `last` (neither, every layer: an MTP module's
    layer)."""
    h, hd, e = g.hidden_size, g.head_dim, g.num_experts
    kv = rp.on_rank(g.num_kv_heads, tp)
    led = Ledger()
    led.model += rp.vocab_rows(g, tp) * h * (first + last) + h * last   # (its own LM head)
    for i, (heads, moe) in enumerate(zip(g.layer_heads, g.moe_layers, strict=True)):
        if layers is not None and i not in layers:
            continue
        q = heads // tp
        led.layer += (q + 2 * kv) * hd * h + q * hd * h + (q * h if g.head_gate else 0)
        led.model += ((q + 2 * kv) * hd if g.attention_bias else 0) + 2 * hd + 2 * h
        if moe:
            led.fp32 += e * h + e       # (the float32 router and its bias)
            led.layer += 3 * h * (e * g.moe_intermediate_size + g.shared_expert_width) // tp
        else:
            led.layer += 3 * h * g.intermediate_size // tp
    return led
