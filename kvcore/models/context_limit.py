"""The longest `max_model_len` vLLM 0.33 accepts for a model without VLLM_ALLOW_LONG_MAX_MODEL_LEN
(`config/model.py`, `_get_and_verify_max_len`): `max_position_embeddings` times the RoPE scaling
factor (not for YaRN, LongRoPE, su, Llama 3 or DeepSeek's scalings, which leave it already
scaled, nor for Gemma 3, whose length is scaled already), or the config's `model_max_length` when
that is larger."""

from __future__ import annotations

from typing import Any

# RoPE types whose max_position_embeddings is already the scaled length (vLLM's list)
UNSCALED = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")


def context_limit(cfg: dict[str, Any], max_position_embeddings: int) -> int:
    factor = 1.0
    if "gemma3" not in str(cfg.get("model_type", "")):
        for rp in _rope_parameters(cfg):
            kind = rp.get("rope_type", rp.get("type", "default"))
            if kind not in UNSCALED and isinstance(rp.get("factor"), (int, float)):
                factor = float(rp["factor"])
    limit = int(max_position_embeddings * factor)
    longest = cfg.get("model_max_length")
    return max(limit, longest) if isinstance(longest, int) else limit


def _rope_parameters(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """The config's RoPE parameter sets: `rope_scaling` or `rope_parameters`, one dict or one
    per layer type."""
    rp = cfg.get("rope_parameters") or cfg.get("rope_scaling")
    if not isinstance(rp, dict):
        return []
    if rp and all(isinstance(v, dict) for v in rp.values()):
        return list(rp.values())
    return [rp]
