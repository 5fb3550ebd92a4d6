"""The activation names vLLM 0.33's `get_act_fn` builds (layers/activation.py's registry): a
projector whose activation it does not know fails there, so kvcli refuses the name rather than
size a model vLLM cannot build (Ultravox's ``projector_act``, Audio Flamingo 3's
``projector_hidden_act``)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped

# (get_act_fn lowers the name and takes a "torch.nn.modules." path's last part; "identity"
# there is nn.Identity)
VLLM_ACTS = ("gelu", "gelu_fast", "gelu_new", "gelu_pytorch_tanh", "relu", "relu2", "silu",
             "swish", "quick_gelu", "tanh", "sigmoid", "xielu")
_TORCH = "torch.nn.modules."


def checked_act(name: Any, field: str, source: str) -> str:
    """`name` as `get_act_fn` reads it (lowered), or a refusal naming `field`."""
    lowered = name.lower() if isinstance(name, str) else None
    if lowered is not None and lowered.startswith(_TORCH):
        last = lowered.split(".")[-1]
        lowered = last if last in VLLM_ACTS or last == "identity" else None
    if lowered is None or lowered not in VLLM_ACTS + ("identity",):
        raise InputError(f"expected an activation vLLM 0.33's get_act_fn builds "
                         f"({', '.join(VLLM_ACTS)}), got {clipped(name)}",
                         path=source or None, field=field)
    return lowered
