"""ERNIE-4.5-VL's language model under a quantised checkpoint, as vLLM 0.33 builds it
(ernie45_vl_moe.py, Ernie4_5_VLMoeMoE): beyond what every MoE decoder holds, its two routers,
``text_experts_gate`` and ``vision_experts_gate``, are float32 ReplicatedLinears built with the
quant_config (fp8 holds them in one byte with float32 scales; AWQ, GPTQ and compressed-tensors
pack them, their scales float32, the routers' params_dtype), and its vision experts, the dense
MLP in their place outside the vision range and the shared experts beside a dense text MLP
are quantised as the text ones are (`kvcore.models.ernie45` counts their parameters).
tests/data/weights_census/quant_ernie_keye/."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from kvcore.models import ct_quant, fp8_shapes
from kvcore.models import fp8_scales as fp8
from kvcore.models.fp8_ignored import layers_path
from kvcore.models.geometry import ModelGeometry
from kvcore.models.int_quant import (
    IntQuant,
    awq_refusal,
    experts_bytes,
    linear_bytes,
    marlin_experts,
)
from kvcore.models.rank_params import shared_width
from kvcore.specs import DTYPE_BYTES

# (the settings a module at a path is packed with, None: unquantised; `experts`: routed ones)
QuantOf = Callable[[str, bool], IntQuant | None]


def gates(g: ModelGeometry, i: int, moe: bool) -> list[fp8.Linear]:
    """Layer `i`'s float32 routers: the text experts' where they are routed (`moe`), the vision
    experts' where they are."""
    v = g.vision_experts
    assert v is not None
    out: list[fp8.Linear] = []
    if moe:
        out.append(("text_experts_gate", (g.num_experts,), g.hidden_size, "replicated"))
    if v.routed[i]:
        out.append(("vision_experts_gate", (v.experts,), g.hidden_size, "replicated"))
    return out


def dense_linears(g: ModelGeometry, i: int, tp: int, moe: bool) -> list[tuple[str, fp8.Linear]]:
    """Layer `i`'s MLP linears beyond the text side's (`fp8_shapes.layer_linears`), with the
    module each sits under: the shared experts where the text experts are a dense MLP, the
    vision experts' dense MLP outside the vision range."""
    v = g.vision_experts
    assert v is not None
    if not v.blocks[i]:
        return []
    shared = shared_width(g)
    out = [("shared_experts", lin) for lin in fp8.mlp_linears(g, shared, tp)] \
        if shared and not moe else []
    if not v.routed[i]:
        out += [("vision_experts", lin) for lin in fp8.mlp_linears(g, g.intermediate_size, tp)]
    return out


def _vision_geometry(g: ModelGeometry) -> ModelGeometry:
    v = g.vision_experts
    assert v is not None
    return replace(g, num_experts=v.experts, moe_intermediate_size=v.width)


def fp8_layer(g: ModelGeometry, i: int, tp: int, moe: bool) -> tuple[int, int]:
    """(router parameters fp8 holds in one byte in place of float32, float32 scales) of layer
    `i` on a rank, beyond the text side's."""
    routers = gates(g, i, moe)
    scales = fp8.rank_scales(g, routers + [lin for _, lin in dense_linears(g, i, tp, moe)])
    v = g.vision_experts
    assert v is not None
    if v.routed[i]:
        scales += fp8_shapes.expert_scales(_vision_geometry(g), tp, g.fp8_block)
    return sum(parts[0] * inp for _, parts, inp, _ in routers), scales


def _linear_bytes(q: IntQuant, lin: fp8.Linear, tp: int, dtype_bytes: int) -> int:
    _, parts, k, split = lin
    if q.family == "ct":
        return ct_quant.linear_bytes(q, parts, k, dtype_bytes)
    return linear_bytes(q, sum(parts), k, k * tp if split == "row" else k, dtype_bytes)


def _path(g: ModelGeometry, i: int, module: str) -> str:
    return f"{layers_path(g)}.{i}.mlp.{module}"


def int_layer(g: ModelGeometry, i: int, tp: int, moe: bool,
              quant_of: QuantOf) -> tuple[int, int]:
    """(model-dtype parameters the packed tensors replace, their bytes net of the float32
    routers they replace) of layer `i` on a rank, beyond the text side's, under AWQ, GPTQ or
    compressed-tensors."""
    dt = DTYPE_BYTES[g.dtype]
    moved = held = 0
    for lin in gates(g, i, moe):
        if q := quant_of(_path(g, i, lin[0]), False):
            # (the float32 router it replaces: counted in the ledger's float32 parameters)
            held += _linear_bytes(q, lin, tp, 4) - 4 * lin[1][0] * lin[2]
    for module, lin in dense_linears(g, i, tp, moe):
        if q := quant_of(_path(g, i, f"{module}.{lin[0]}"), False):
            moved += sum(lin[1]) * lin[2]
            held += _linear_bytes(q, lin, tp, dt)
    if (q := _experts_quant(g, i, tp, quant_of)) is not None:
        v = g.vision_experts
        assert v is not None
        inter = v.width // tp
        moved += v.experts * 3 * g.hidden_size * inter
        held += (ct_quant.experts_bytes if q.family == "ct" else experts_bytes)(
            q, v.experts, g.hidden_size, inter, 2, dt)
    return moved, held


def _experts_quant(g: ModelGeometry, i: int, tp: int, quant_of: QuantOf) -> IntQuant | None:
    v = g.vision_experts
    assert v is not None
    if not v.routed[i]:
        return None
    q = quant_of(_path(g, i, "vision_experts"), True)
    if q is not None and q.family == "gptq" and not marlin_experts(q, g.hidden_size,
                                                                   v.width // tp):
        return g.int_quant  # (MoeWNA16's fallback: the config's own settings, no rule applied)
    return q


def int_refusal(g: ModelGeometry, i: int, tp: int, moe: bool,
                quant_of: QuantOf) -> tuple[str, str, int] | None:
    """vLLM's refusal of layer `i`'s modules beyond the text side's at `tp` under AWQ or
    compressed-tensors: (module, vLLM's words, group size); None if it builds them."""
    named = [(lin[0], lin) for lin in gates(g, i, moe)] + [
        (f"{module}.{lin[0]}", lin) for module, lin in dense_linears(g, i, tp, moe)]
    for module, (_, parts, k, split) in named:
        q = quant_of(_path(g, i, module), False)
        if q is None:
            continue
        # (vLLM's words name the module by its path in the class: under language_model.)
        why = ct_quant.group_refusal(q, k, f"language_model.{_path(g, i, module)}") \
            if q.family == "ct" else \
            awq_refusal(q, sum(parts), k, k * tp if split == "row" else k)
        if why:
            return module, why, q.group_size
    e = _experts_quant(g, i, tp, quant_of)
    v = g.vision_experts
    assert v is not None
    if e is not None and e.family == "ct" and (
            why := ct_quant.experts_refusal(e, g.hidden_size, v.width // tp)):
        return "vision_experts", why, e.group_size
    return None
