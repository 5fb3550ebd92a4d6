"""The first shard vLLM 0.33 refuses of an AWQ / GPTQ / compressed-tensors checkpoint at a
tensor-parallel size (`refusal`), and its refusal naming the option (`check_tp`): the linears of
each layer as `kvcore.models.int_quant_rank` packs them, in the order vLLM builds them."""

from __future__ import annotations

from kvcore.errors import InputError
from kvcore.models import ct_quant, ernie45_vl_quant, tower_int_quant
from kvcore.models.geometry import ModelGeometry
from kvcore.models.int_quant import IntQuant, awq_refusal, wna16_refusal
from kvcore.models.int_quant_rank import layer_linears, modelled, quant_of
from kvcore.models.sparse_mla import layer_geometry
from kvcore.models.text_paths import vllm_text_path


def refusal(g: ModelGeometry, tp: int) -> tuple[int, str, str, int] | None:
    """The first layer (index, module, vLLM's words, the module's group size) vLLM refuses at
    `tp`; None if it builds. GPTQ's linears are never refused (Marlin or its fallback take
    any shard), its experts where MoeWNA16 cannot halve its group to fit (`wna16_refusal`)."""
    q = modelled(g)
    if q is None:
        return None
    tower = tower_int_quant.refusal(g, q, tp)
    if tower and g.architecture not in tower_int_quant.LLM_FIRST:
        return -1, *tower      # (the tower's first: vLLM builds it before the language model)
    for i, kind in enumerate(g.layer_kinds):
        moe = g.moe_layers[i] if i < len(g.moe_layers) else False
        linears, experts = layer_linears(layer_geometry(g, i), q, tp, i, kind, moe)
        first, after = linears, []
        if g.model_type == "step3_text":    # (its MoE block built before its shared expert)
            first = [x for x in linears if ".self_attn." in x[0]]
            after = [x for x in linears if x not in first]
        if refused := (_linears_refusal(g, i, q, first) or _experts_refusal(g, i, tp, q, experts)
                       or _linears_refusal(g, i, q, after)):
            return refused
        if g.vision_experts is not None and q.family != "gptq" and (
                vl := ernie45_vl_quant.int_refusal(g, i, tp, moe, quant_of(g, q))):
            return i, *vl
    return (-1, *tower) if tower else None


def _linears_refusal(g: ModelGeometry, i: int, q: IntQuant,
                     linears: list) -> tuple[int, str, str, int] | None:
    for path, parts, k, full, mq in linears if q.family != "gptq" else ():
        # (compressed-tensors' words name the linear by its path in the multimodal class)
        if why := (ct_quant.group_refusal(mq, k, vllm_text_path(g.architecture, path))
                   if q.family == "ct" else
                   awq_refusal(q, sum(parts), k, full)):
            return i, path.rsplit(".", 1)[-1], why, mq.group_size
    return None


def _experts_refusal(g: ModelGeometry, i: int, tp: int, q: IntQuant,
                     experts: IntQuant | None) -> tuple[int, str, str, int] | None:
    """The refusal of layer `i`'s routed experts: compressed-tensors' of widths not whole
    groups, MoeWNA16's under AWQ or GPTQ (text, and ERNIE-4.5-VL's vision ones, vLLM building
    the text experts first)."""
    if q.family == "ct":
        if experts is not None and (why := ct_quant.experts_refusal(
                experts, g.hidden_size, g.moe_intermediate_size // tp)):
            return i, "experts", why, experts.group_size
        return None
    widths = [("experts", g.moe_intermediate_size)] if experts is not None else []
    v = g.vision_experts
    if v is not None and v.routed[i]:
        widths.append(("vision_experts", v.width))
    for module, width in widths:
        if why := wna16_refusal(q, g.hidden_size, width // tp):
            return i, module, why, q.group_size
    return None


def check_tp(g: ModelGeometry, tp: int) -> None:
    """vLLM's refusal of an AWQ or compressed-tensors shard at `tp` (`refusal`), naming the
    option."""
    refused = refusal(g, tp)
    if refused is not None and g.int_quant is not None:
        layer, module, why, group = refused
        label = {"awq": "AWQ", "gptq": "GPTQ"}.get(g.int_quant.family, "compressed-tensors")
        where = f"layer {layer}'s {module}" if layer >= 0 else f"the vision tower's {module}"
        if tp == 1:     # (the checkpoint's groups, not a TP size: Falcon-7B's 4,544-wide input)
            raise InputError(f"{g.name}'s {label} groups of {group} do not divide the input "
                             f"even on one rank ({where}), and vLLM refuses to build it: "
                             f"\"{why}\"", path=g.source or None,
                             field="quantization_config.group_size")
        raise InputError(f"{g.name}'s {label} groups of {group} do not split "
                         f"over it ({where}), and vLLM refuses to build it: "
                         f"\"{why}\"; got {tp}", field="tensor_parallel_size")
