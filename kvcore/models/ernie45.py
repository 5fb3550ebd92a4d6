"""ERNIE-4.5's MoE language models as vLLM 0.33 builds them: the text model (ernie45_moe.py,
``ernie4_5_moe``) and ERNIE-4.5-VL's (ernie45_vl_moe.py, the -PT checkpoints' remote-code
``ernie4_5_moe_vl``, whose text keys sit at the top level of config.json).

A decoder layer is MoE where ``(i + 1) % moe_layer_interval == 0`` and i lies within
[moe_layer_start_index, moe_layer_end_index] (the text config class makes its default end, -1,
the last layer; the VL's remote class keeps the lists as written), else a dense MLP of
intermediate_size. The MoE block's router and its e_score_correction_bias are float32, its
``moe_num_shared_experts`` shared experts one MLP of that many times moe_intermediate_size.
ERNIE-4.5-VL gives these keys as lists (text, vision): a MoE layer holds the text experts
(or, outside the text range, a dense MLP in their place), and beside them the vision experts
(outside the vision range a dense MLP again), each set with its float32 router, one
(2, experts) float32 bias, and the shared experts once (`VisionExperts`;
tests/data/weights_census/mm_ernie)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvcore.errors import InputError, clipped
from kvcore.models.ernie45_vl_tower import token_id_buffer_bytes

if TYPE_CHECKING:   # (rank_params reads the geometry, which holds a `VisionExperts`)
    from kvcore.models.rank_params import Ledger

ERNIE_MOE = "ernie4_5_moe"
ERNIE_VL = "ernie4_5_moe_vl"
# (transformers 5.20's Ernie4_5_VLMoeConfig's text config: kv_spec_census/ records vLLM's
# AttributeError on that format)
HF_FORMAT_TEXT = "ernie4_5_vl_moe_text"
# (the keys ERNIE-4.5-VL gives as [text, vision] lists)
PAIRED = ("moe_num_experts", "moe_intermediate_size", "moe_layer_start_index",
          "moe_layer_end_index")


@dataclass(frozen=True, slots=True)
class VisionExperts:
    """ERNIE-4.5-VL's second expert set: its experts and their width, and per decoder layer
    whether it is a MoE layer (``blocks``: the block holds both sets) and whether the vision
    experts are built there (``routed``; else a dense MLP of intermediate_size)."""
    experts: int
    width: int
    blocks: tuple[bool, ...]
    routed: tuple[bool, ...]


def _pair(c: dict[str, Any], key: str, default: Any, source: str,
          least: int = -2**31 + 1) -> tuple[int, int]:
    """A [text, vision] key of ERNIE-4.5-VL: two integers (vLLM indexes [0] and [1]), each at
    least `least` (a width: no linear layer has a negative one)."""
    v = c.get(key, default)
    if not isinstance(v, list) or len(v) != 2 or not all(
            isinstance(x, int) and not isinstance(x, bool) and least <= x < 2**31 for x in v):
        kind = "two integers" if least < 0 else f"two integers >= {least}"
        raise InputError(f"expected a list of {kind} (text, vision), got {clipped(v)}",
                         path=source or None, field=key)
    return v[0], v[1]


def _shared_experts(get: Any, source: str) -> int:
    """moe_num_shared_experts: vLLM builds the shared experts where it is `> 0` (a string or a
    list fails there, an empty one too; a float sizes no linear layer), none at 0 or below."""
    v = get("moe_num_shared_experts", 0)
    if not isinstance(v, int) or isinstance(v, bool) or not -2**31 < v < 2**31:
        raise InputError(f"expected an integer, got {clipped(v)}", path=source or None,
                         field="moe_num_shared_experts")
    return max(v, 0)


def text_keys(c: dict[str, Any], model_type: str, source: str) -> dict[str, Any]:
    """ERNIE-4.5-VL's config with each [text, vision] key as its text entry, for the reading
    every model shares (the vision entries are read by `ernie_fields`); any other as it is.
    Transformers' own format of it is refused: vLLM 0.33 cannot build it."""
    if model_type == HF_FORMAT_TEXT:
        raise InputError("ERNIE-4.5-VL in transformers' format (model_type ernie4_5_vl_moe): "
                         "vLLM 0.33 builds Ernie4_5_VLMoeForConditionalGeneration from the -PT "
                         "checkpoints' config (ernie4_5_moe_vl) and fails on this one (its "
                         "vision_config has no embed_dim)", path=source or None,
                         field="model_type")
    if model_type != ERNIE_VL:
        return c
    out = dict(c)
    for key in PAIRED:
        if key in c:
            out[key] = _pair(c, key, None, source)[0]
    return out


def _index(c: dict[str, Any], get: Any, key: str, default: int, source: str) -> int:
    v = get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or not -2**31 < v < 2**31:
        raise InputError(f"expected an integer, got {clipped(v)}", path=source or None,
                         field=key)
    return v


def ernie_fields(c: dict[str, Any], model_type: str, n_layers: int, experts: int, get: Any,
                 source: str) -> dict[str, Any]:
    """The MoE fields of an ERNIE-4.5 geometry (`c`: the config as written, `get`: its keys
    with the class defaults, `experts`: the text experts read), as vLLM builds its layers."""
    if get("use_bias", False):
        # (vLLM gives the QKV projection and every MLP a bias then: not modelled)
        raise InputError("kvcli does not size ERNIE-4.5's biased projections", path=source
                         or None, field="use_bias")
    last = n_layers - 1
    interval = get("moe_layer_interval", 1)
    if not isinstance(interval, int) or isinstance(interval, bool) or interval < 1:
        raise InputError(f"expected an integer >= 1, got {clipped(interval)}",
                         path=source or None, field="moe_layer_interval")
    if model_type == ERNIE_VL:
        starts = _pair(c, "moe_layer_start_index", None, source)
        ends = _pair(c, "moe_layer_end_index", [last, last], source)
        counts = _pair(c, "moe_num_experts", None, source)
        widths = _pair(c, "moe_intermediate_size", None, source, least=0)
        if counts[0] != counts[1]:     # (vLLM asserts it: one (2, experts) bias tensor)
            raise InputError(f"the text and vision expert counts differ ({counts[0]} and "
                             f"{counts[1]}): vLLM's ERNIE-4.5-VL asserts them equal",
                             path=source or None, field="moe_num_experts")
        lo, hi, most = min(starts), max(ends), max(counts)
    else:
        lo = _index(c, get, "moe_layer_start_index", 0, source)
        hi = _index(c, get, "moe_layer_end_index", -1, source)
        hi = last if hi == -1 else hi   # (Ernie4_5_MoeConfig's __post_init__: -1 the last)
        most = experts
    use = get("use_moe", most > 0)
    blocks = tuple(bool(use) and (i + 1) % interval == 0 and lo <= i <= hi
                   for i in range(n_layers))
    shared = _shared_experts(get, source) * get("moe_intermediate_size", 0)
    # (the width only: vLLM's perf.py reads n_shared_experts / num_shared_experts, which an
    # ERNIE config does not give, and bills no shared expert)
    fields: dict[str, Any] = {"moe_layers": blocks, "router_score_bias": True,
                              "shared_expert_width": shared}
    if model_type == ERNIE_VL:
        fields["moe_layers"] = tuple(b and starts[0] <= i <= ends[0]
                                     for i, b in enumerate(blocks))
        fields["class_buffers"] = token_id_buffer_bytes(c)
        fields["vision_experts"] = VisionExperts(counts[1], widths[1], blocks, tuple(
            b and starts[1] <= i <= ends[1] for i, b in enumerate(blocks)))
    return fields


def vision_experts_layer(v: VisionExperts, hidden: int, inter: int, shared: int, text_moe: bool,
                         i: int, tp: int, led: Ledger) -> None:
    """What layer `i` of ERNIE-4.5-VL holds on one rank beyond the text experts' MoE block
    (`rank_params.moe`, where `text_moe`) or the dense MLP in their place: the vision experts
    and their router (or a dense MLP in their place), the second row of the float32 bias, and
    the shared experts and the first row where the text experts are a dense MLP."""
    if not v.blocks[i]:
        return
    led.fp32 += v.experts if text_moe else 2 * v.experts
    if not text_moe:
        led.layer += 3 * hidden * shared // tp
    if v.routed[i]:
        led.fp32 += hidden * v.experts
        led.layer += v.experts * 3 * hidden * v.width // tp
    else:
        led.layer += 3 * hidden * inter // tp
