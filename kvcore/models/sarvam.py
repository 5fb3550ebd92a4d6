"""Sarvam's MLA models (``sarvam_mla``, vLLM 0.33's SarvamMLAForCausalLM in sarvam.py) as
vLLM builds them: DeepSeek-V2's multi-head latent attention (one ``kv_lora_rank +
qk_rope_head_dim`` latent a token, `kvcore.models.mla`) with a MoE of its own.

vLLM's ModelArchConfigConvertor does not list ``sarvam_mla`` among its MLA types, so the model
is not `use_mla`; its layers are MLAAttention all the same, and the cache is theirs
(tests/data/refused_lifted/). The checkpoints bring their config class as remote code: vLLM
reads the keys they omit through getattr's defaults (`DEFAULTS`), and ``q_lora_rank``
missing is no query bottleneck. What differs from DeepSeek's MoE (SarvamMLABlock,
SarvamMLAMoE): the MoE layers are every ``moe_layer_freq``-th counted from
``first_k_dense_replace`` (DeepSeek's count from 0), the shared experts one MLP of
``num_shared_experts x moe_shared_expert_intermediate_size`` (else ``moe_intermediate_size``),
and the router's float32 ``e_score_correction_bias`` unless
``moe_router_enable_expert_bias`` is false (its weight in the model dtype whatever
``router_dtype`` says: that is the type of its output).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvcore.errors import InputError

SARVAM_MLA = "sarvam_mla"
SARVAM_ARCH = "SarvamMLAForCausalLM"

# sarvam.py's getattr defaults for the keys a config may leave out
DEFAULTS: dict[str, Any] = {"first_k_dense_replace": 1, "moe_layer_freq": 1,
                            "intermediate_size": 16384, "num_shared_experts": 1}


def sarvam_fields(get: Callable[..., Any], get_int: Callable[..., Any],
                  get_dim: Callable[..., Any], n_layers: int, num_experts: int,
                  moe_width: int, quantised: bool) -> dict[str, Any]:
    """The MoE layers, the shared experts' width and the router's bias, as SarvamMLABlock and
    SarvamMLAMoE read them; a quantised checkpoint's weights not counted (none recorded)."""
    first, freq = get_int("first_k_dense_replace"), get_dim("moe_layer_freq")
    shared = get_int("num_shared_experts")
    width = get_int("moe_shared_expert_intermediate_size") or moe_width
    return {"moe_layers": tuple(num_experts > 0 and i >= first and (i - first) % freq == 0
                                for i in range(n_layers)),
            "num_shared_experts": shared if num_experts else 0,
            "shared_expert_width": width * shared if num_experts else 0,
            "router_score_bias": num_experts > 0 and bool(
                get("moe_router_enable_expert_bias", True)),
            "weights_unmodelled": "a quantised Sarvam MLA checkpoint's weights" if quantised
            else ""}


def check_sarvam(architecture: str, model_type: str, c: dict[str, Any], source: str) -> None:
    """The class read only as its checkpoints write it: under model_type sarvam_mla (under
    another kvcli would read another family's MoE, or plain attention, where vLLM builds
    Sarvam's) and with the ``kv_lora_rank`` SarvamMLAAttention reads (without it vLLM fails
    building the layer)."""
    if architecture == SARVAM_ARCH and model_type != SARVAM_MLA:
        raise InputError(f"{SARVAM_ARCH} is read under its checkpoints' model_type "
                         f"{SARVAM_MLA!r}, got {model_type!r}", path=source or None,
                         field="model_type")
    if model_type == SARVAM_MLA and c.get("kv_lora_rank") is None:
        raise InputError("missing 'kv_lora_rank', which vLLM 0.33's Sarvam MLA attention "
                         "reads", path=source or None, field="kv_lora_rank")
