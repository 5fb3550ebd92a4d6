"""Qwen3-Next (Qwen3-Next-80B-A3B): Gated DeltaNet linear attention beside full attention, as
vLLM 0.33 serves it.

Layers (transformers' Qwen3NextConfig): ``layer_types`` when given (``linear_attention``,
``full_attention``), else every ``full_attention_interval``-th layer (4) full attention and the
rest Gated DeltaNet. vLLM keeps a Gated DeltaNet layer's state as a Mamba state
(`MambaSpec`, kvcli's kind ``mamba`` with a ``gdn`` geometry;
`Qwen3NextForCausalLM.get_mamba_state_shape_from_config`): a conv state of
``(linear_conv_kernel_dim - 1, (2 x key heads x key dim + value heads x value dim) / tp)`` and a
recurrent state of ``(value heads / tp, value dim, key dim)``, both in the model dtype.

GPU-dependent, assumed Hopper: with FlashInfer's GDN prefill kernel (vLLM picks it on Hopper,
and on Blackwell with key dim 128 and CUDA 13) a GDN layer writes its state inside a prefill:
its spec declares one prefill checkpoint block on the Mamba block grid, and vLLM aligns the
attention block to 64 tokens (``FLASHINFER_GDN_CHECKPOINT_ALIGNMENT``). With the Triton kernel
(other GPUs) neither happens: 2 blocks a request instead of 3. kvcli sizes the FlashInfer case
and says so in a warning (`gdn_note`).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError

# transformers' Qwen3NextConfig defaults (the oracle's transformers) for keys a config omits.
QWEN3_NEXT_DEFAULTS: dict[str, Any] = {
    "head_dim": 256, "full_attention_interval": 4, "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
    "linear_value_head_dim": 128, "max_position_embeddings": 32768, "vocab_size": 151936}

# vLLM's FLASHINFER_GDN_CHECKPOINT_ALIGNMENT (v1/attention/backends/gdn_attn.py)
FLASHINFER_GDN_CHECKPOINT_ALIGNMENT = 64

_TYPES = {"linear_attention": "mamba", "full_attention": "full"}


def qwen3_next_kinds(c: dict[str, Any], n: int, get_dim, source: str) -> tuple[str, ...]:
    types = c.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n or not all(
                isinstance(t, str) and t in _TYPES for t in types):
            raise InputError(f"'layer_types' must list {n} of linear_attention, full_attention",
                             path=source or None, field="layer_types")
        return tuple(_TYPES[t] for t in types)
    every = get_dim("full_attention_interval")
    return tuple("full" if (i + 1) % every == 0 else "mamba" for i in range(n))


def gdn_note(model: str, num_speculative_tokens: int = 0) -> str:
    """The warning for a model with Gated DeltaNet layers (its sizing assumes Hopper); a
    request's Mamba blocks count speculative decoding's K too."""
    k = num_speculative_tokens
    return (f"{model} has Gated DeltaNet layers: vLLM 0.33 checkpoints their state inside a "
            "prefill only with FlashInfer's GDN kernel (Hopper; Blackwell with CUDA 13), which "
            f"kvcli assumes: {3 + k} Mamba blocks a request and the attention block a multiple "
            f"of 64 tokens; with the Triton kernel (other GPUs) vLLM keeps {2 + k} a request")


def gdn_state(get_dim, ssm_dtype: str | None = None) -> Any:
    """The Gated DeltaNet state in kvcore's Mamba fields (a `MambaGeometry`); ``get_dim``
    reads a positive size from the config (`kvcore.models.hf_config`); ``ssm_dtype``: the
    recurrent state's where it is not the model's (Qwen3.5's)."""
    from kvcore.models.geometry import MambaGeometry  # (geometry imports this module)

    nv, dv = get_dim("linear_num_value_heads"), get_dim("linear_value_head_dim")
    return MambaGeometry("gdn", nv * dv, get_dim("linear_key_head_dim"),
                         get_dim("linear_conv_kernel_dim"), n_heads=nv, d_head=dv,
                         n_groups=get_dim("linear_num_key_heads"), ssm_dtype=ssm_dtype)
