"""Jamba's layer layout as vLLM 0.33 reads it (transformers' `JambaConfig`): attention where
i % ``attn_layer_period`` == ``attn_layer_offset`` (Mamba elsewhere), an expert feed-forward
where i % ``expert_layer_period`` == ``expert_layer_offset``."""

from __future__ import annotations

from kvcore.errors import InputError


def jamba_layout(what: str, get, get_dim, source: str) -> tuple[int, int]:
    """A Jamba's attention or expert layers: (period, offset), an integer below the period as
    JambaConfig.validate_architecture requires (a text or an offset past the period made every
    layer Mamba, or none an expert layer, without a word; a negative one transformers takes)."""
    period, key = get_dim(f"{what}_layer_period"), f"{what}_layer_offset"
    offset = get(key)
    if not isinstance(offset, int) or isinstance(offset, bool) or not -2**63 < offset < period:
        raise InputError(f"expected an integer below {what}_layer_period ({period}), got "
                         f"{offset!r}", path=source or None, field=key)
    return period, offset
