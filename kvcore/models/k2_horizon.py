"""K2-Horizon (`k2_horizon`, vLLM 0.33's k2_horizon.py): a Qwen3-MoE-shaped decoder whose
router is a GateLinear given the quant_config (quantised under every method, as Qwen3-MoE's:
`kvcore.models.fp8_scales.QUANTISED_GATES`) with an optional bias (``moe_gate_bias``) made
float32, MoE layers chosen by ``mlp_only_layers`` and ``decoder_sparse_step``.

What kvcli does not model of it, refused by name rather than sized as a plain MoE model: the
MoVA attention (``mova_num_experts``: routed value experts), the gated attention
(``attention_gate_func``: a gate_proj beside the QKV), the q/k norms over a rank's heads
(``query_key_norm``) and the attention biases (``attention_bias``: on o_proj too). Checked per
rank against vLLM's builds: tests/data/weights_census/k2_horizon/.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvcore.errors import InputError

K2_HORIZON = "k2_horizon"

# (the config key that turns a feature on, what it builds)
_UNMODELLED = (("mova_num_experts", "MoVA attention"),
               ("attention_gate_func", "gated attention"),
               ("query_key_norm", "q/k norms"),
               ("attention_bias", "attention biases"))


def k2_horizon_fields(get: Callable[..., Any]) -> dict[str, Any]:
    """The geometry's fields a K2-Horizon config sets: the router's float32 bias, and why
    the weights are not estimated ("" where every feature it uses is modelled)."""
    used = [what for key, what in _UNMODELLED if get(key)]
    return {"router_score_bias": bool(get("moe_gate_bias", False)),
            "weights_unmodelled": (f"K2-Horizon's {', '.join(used)}" if used else "")}


def k2_rope_dim(get: Callable[..., Any], head_dim: int, source: str) -> int:
    """The dims RoPE rotates: ``rope_head_dim`` (0 or absent: the head dim, as vLLM's
    ``rope_head_dim or head_dim``). Its partial NeoX RoPE asserts an even width of at most
    the head dim, so anything else is refused here, where int() raised on a string."""
    v = get("rope_head_dim")
    if not v:
        return head_dim
    if (not isinstance(v, int) or isinstance(v, bool) or not 0 < v <= head_dim
            or v % 2):
        raise InputError(f"expected an even integer from 2 to the head dim {head_dim}, got "
                         f"{v!r} (vLLM's partial NeoX RoPE asserts it)", path=source or None,
                         field="rope_head_dim")
    return v
