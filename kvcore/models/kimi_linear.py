"""Kimi Linear (moonshotai/Kimi-Linear-48B-A3B, ``KimiLinearForCausalLM``, model_type
``kimi_linear``) as vLLM 0.33 serves it: Kimi Delta Attention (KDA) layers beside MLA layers
(vllm/models/kimi_k3/nvidia/model.py, its KDA layer
model_executor/layers/mamba/gdn/kimi_gdn_linear_attn.py; checked against vLLM built here:
tests/data/kimi_linear/).

* Layers: ``linear_attn_config.kda_layers`` lists the KDA layers, 1-based (layer i is KDA when
  i + 1 is listed); every other layer is MLA (NoPE: ``mla_use_nope`` must be true, vLLM asserts
  it), read as DeepSeek's (`kvcore.models.mla`): one latent of ``kv_lora_rank +
  qk_rope_head_dim`` a token.
* A KDA layer's state is a Mamba state (a `MambaSpec` of vLLM's GDN backend):
  ``MambaStateShapeCalculator.kda_state_shape``: one conv state over q, k and v, ``(kernel - 1
  + K, 3 x heads x head_dim / tp)`` in the model dtype, and a recurrent state ``(heads / tp,
  head_dim, head_dim)`` in float32 (``kda_state_dtype``, mamba_ssm_cache_dtype auto). Its
  prefill runs the Triton KDA kernel: no prefill checkpoint block.
* Hybrid block size: vLLM's ``_align_hybrid_block_size`` with MLA raises the attention block
  in steps of 128 tokens (the MLA decode kernels' alignment) until an MLA page (1,152 B a token
  in bf16) holds the KDA state: 1,920 tokens for the published model at TP 1.
* Weights: `kvcore.models.kimi_linear_weights`.

Refused as vLLM fails to build them: no ``linear_attn_config`` (vLLM's state-shape hook
subscripts it: "'NoneType' object is not subscriptable"), an MLA layer without
``kv_lora_rank`` or ``mla_use_nope``.

Kimi-K3 (``KimiK3ForConditionalGeneration``, model_type ``kimi_k3``) builds this class over its
``text_config`` (``init_vllm_registered_model``, architectures KimiLinearForCausalLM) beside a
vision tower. Its additions (``use_full_rank_gate``: ``KimiK3DeltaAttention``, the same
``kda_state_shape``; ``attn_res_block_size``; ``routed_expert_hidden_size``, a latent MoE)
change the weights, not the caches: the KV cache is sized, the weights are not counted
(``weights_unmodelled``: give ``--weights-gib``). Checked: tests/data/kimi_linear's tiny-kimi-k3.
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError

KIMI_LINEAR = "kimi_linear"
# vLLM's KimiLinearConfig defaults (transformers_utils/configs/kimi_linear.py) for keys a
# config omits (kv_lora_rank and the MLA head sizes have none: None)
KIMI_LINEAR_DEFAULTS: dict[str, Any] = {
    "vocab_size": 163840, "intermediate_size": 11008, "max_position_embeddings": 4096,
    "num_shared_experts": 0, "first_k_dense_replace": 0, "moe_layer_freq": 1}
# Kimi-K3's keys on the shared class: other layers than Kimi Linear's
_K3_KEYS = ("attn_res_block_size", "routed_expert_hidden_size")
# the MoE width per rank below which vLLM pads it (KimiMoE: min_moe_intermediate_per_partition)
MIN_MOE_INTERMEDIATE_PER_RANK = 256


def kimi_linear_fields(c: dict[str, Any], n_layers: int, get_dim, mla: Any,
                       source: str) -> dict[str, Any]:
    """The geometry fields Kimi Linear's layers change: kinds, the KDA state, the MLA output
    gate (kept in ``head_gate``) and the float32 router score bias."""
    from kvcore.models.geometry import MambaGeometry  # (geometry imports the model readers)

    lac = c.get("linear_attn_config")
    if not isinstance(lac, dict):
        raise InputError("vLLM 0.33's KimiLinearForCausalLM needs a 'linear_attn_config' "
                         "object (its state-shape hook reads num_heads from it)",
                         path=source or None, field="linear_attn_config")
    for key in ("kda_layers", "full_attn_layers"):
        if not isinstance(lac.get(key), list):
            raise InputError(f"expected a list of 1-based layer numbers, got {lac.get(key)!r}",
                             path=source or None, field=f"linear_attn_config.{key}")
    # (Kimi-K3's layers: the same caches, other weights, which kvcli does not count)
    k3 = [k for k in (*_K3_KEYS, "use_full_rank_gate")
          if (lac if k == "use_full_rank_gate" else c).get(k) is not None]
    kda = set(lac["kda_layers"])
    kinds = tuple("mamba" if i + 1 in kda else "mla" for i in range(n_layers))
    if "mla" in kinds and (mla is None or c.get("mla_use_nope") is not True):
        why = "kv_lora_rank" if mla is None else "mla_use_nope"
        raise InputError(f"an MLA layer needs {why!r} (vLLM's KimiDecoderLayer asserts it)",
                         path=source or None, field=why)

    def kda_dim(key: str) -> int:
        v = lac.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InputError(f"expected an integer >= 1, got {v!r}", path=source or None,
                             field=f"linear_attn_config.{key}")
        return v

    heads, dim = kda_dim("num_heads"), kda_dim("head_dim")
    state = MambaGeometry("kda", heads * dim, dim, kda_dim("short_conv_kernel_size"),
                          n_heads=heads, d_head=dim, n_groups=heads, ssm_dtype="float32")
    # (the state whatever layers are kept: vLLM deems the class hybrid, its config having no
    # layer_types, and raises the MLA block for it: `kvcore.models.hybrid_class`)
    return {"layer_kinds": kinds, "mamba": state,
            "head_gate": bool(c.get("mla_use_output_gate")), "router_score_bias": True,
            "weights_unmodelled": f"Kimi-K3's layers' weights ({', '.join(k3)})" if k3 else ""}


def padded_moe_width(width: int, tp: int) -> int:
    """KimiMoE's routed experts' width: padded to 256 a rank when TP splits it thinner."""
    if tp > 1 and width // tp < MIN_MOE_INTERMEDIATE_PER_RANK:
        return MIN_MOE_INTERMEDIATE_PER_RANK * tp
    return width
