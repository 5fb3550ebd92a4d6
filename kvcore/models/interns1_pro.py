"""Intern-S1-Pro (`InternS1ProForConditionalGeneration`, interns1_pro.py; model_type
interns1_pro, remote code) as vLLM 0.33 builds it:
* its ``text_config`` (``interns1_pro_text``) as Qwen3-MoE's layers (q/k norms, experts where
  ``decoder_sparse_step`` and ``mlp_only_layers`` put them, the dense ones Qwen3's MLP), with
  the remote config class's defaults for the keys it leaves out;
* its rotary embedding FoPE (rotary_embedding/fope.py), which every layer asserts: one module
  shared by the layers (get_rope's cache), holding ``cos_coef`` and ``sin_coef`` (KV heads of
  the rank x F x F, the model dtype; F the inverse frequencies kept: the first
  ``num_inv_freq``, else those above 2 pi / max_position_embeddings), the float32 ``inv_freq``
  (F) and a ``cos_sin_cache`` of max_position_embeddings x KV heads of the rank x 2 x head_dim
  in the model dtype, in place of the usual RoPE cache; ``fope_sep_head`` false fails in vLLM
  (its einsum takes the 3-D coefficients as 2-D);
* Qwen3-VL's vision tower (`kvcore.models.qwen3_5`) without deepstack mergers (its vision
  config has no ``deepstack_visual_indexes``), images and videos, ``--mm-encoder-tp-mode data``
  taken. Checked per rank against vLLM's class on the meta device
  (tests/data/weights_census/mm_audio/)."""

from __future__ import annotations

import math
from typing import Any

from kvcore.errors import InputError, clipped

ARCH = "InternS1ProForConditionalGeneration"
# configuration_interns1_pro.py's InternS1ProTextConfig defaults, for the keys kvcli reads
TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632,
    "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
    "max_position_embeddings": 128000, "rope_theta": 5000000.0, "attention_bias": False,
    "decoder_sparse_step": 1, "moe_intermediate_size": 1408, "num_experts_per_tok": 4,
    "num_experts": 60, "mlp_only_layers": [], "tie_word_embeddings": False}
_FOPE_KEYS = ("fope_init_factor", "fope_sep_head", "num_inv_freq")


def as_built(cfg: dict[str, Any], source: str) -> dict[str, Any]:
    """An Intern-S1-Pro config with its text config as the Qwen3-MoE layers vLLM builds (its
    FoPE checked); any other config unchanged."""
    archs = cfg.get("architectures")
    if not (isinstance(archs, list) and archs and archs[0] == ARCH):
        return cfg
    text = cfg.get("text_config")
    text = {} if text is None else text
    if not isinstance(text, dict):
        raise InputError(f"must be an object, got {clipped(text)}", path=source or None,
                         field="text_config")
    rope = text.get("rope_scaling")
    rope = rope if isinstance(rope, dict) else {}
    if not any(rope.get(k) is not None for k in _FOPE_KEYS):
        raise InputError("should use FOPE for InternS1Pro model (vLLM's assertion: "
                         "rope_scaling names none of fope_init_factor, fope_sep_head, "
                         "num_inv_freq)", path=source or None, field="text_config.rope_scaling")
    if not rope.get("fope_sep_head"):
        raise InputError("einsum(): the number of subscripts in the equation (2) does not match "
                         "the number of dimensions (3) for operand 1 (vLLM's FoPE builds its "
                         "cache only with fope_sep_head true)", path=source or None,
                         field="text_config.rope_scaling.fope_sep_head")
    built = {**TEXT_DEFAULTS, **{k: v for k, v in text.items() if v is not None},
             "model_type": "qwen3_moe"}
    return {**cfg, "text_config": built}


def fope_freqs(cfg: dict[str, Any], head_dim: int, positions: int, source: str) -> int:
    """F, the inverse frequencies FoPE keeps (0 for any other model)."""
    archs = cfg.get("architectures")
    if not (isinstance(archs, list) and archs and archs[0] == ARCH):
        return 0
    rope = cfg["text_config"]["rope_scaling"]
    kept = rope.get("num_inv_freq")
    half = head_dim // 2
    if kept is not None:
        if not isinstance(kept, int) or isinstance(kept, bool) or kept < 1:
            raise InputError(f"expected an integer >= 1, got {clipped(kept)}",
                             path=source or None, field="text_config.rope_scaling.num_inv_freq")
        return min(kept, half)
    theta = float(cfg["text_config"]["rope_theta"])
    # (vLLM compares in float32; no published config lies within its rounding of the bound)
    return sum(theta ** (-2 * i / head_dim) > 2 * math.pi / positions for i in range(half))


def fope_rank_params(freqs: int, kv_heads: int, tp: int) -> int:
    """``cos_coef`` and ``sin_coef`` on one TP rank (its KV heads: replicated below TP)."""
    return 2 * max(1, kv_heads // tp) * freqs * freqs


def fope_rank_buffer_bytes(freqs: int, kv_heads: int, tp: int, head_dim: int,
                           positions: int, dtype_bytes: int) -> int:
    """``inv_freq`` (float32) and ``cos_sin_cache`` on one TP rank."""
    return 4 * freqs + positions * max(1, kv_heads // tp) * 2 * head_dim * dtype_bytes
