"""The page of a cache that keeps states rather than tokens (vLLM 0.33's
``AttentionSpec.unpadded_page_size_bytes`` and `_apply_alignment_padding`), shared by
DeepSeek-V4's MLA specs: `kvcore.specs.MLAAttentionSpec` and
`kvcore.window_mla_spec.SlidingWindowMLASpec`. Apart so both read it without an import cycle.

A block of ``block_size`` tokens holds ``block_size // tokens_per_state`` states (a compressed
layer: one state per 4 or 128 tokens) of ``state_content_bytes`` each where the spec gives it
(fp8_ds_mla: 448 B NoPE + 128 B RoPE + 8 B of scales = 584), else the head's natural bytes
(one latent vector: no separate V); the page is then rounded up to ``alignment`` bytes.
"""

from __future__ import annotations

from typing import Any


def state_page(spec: Any, natural_state_bytes: int) -> int:
    """One head slot's states a block, each ``state_content_bytes`` or the natural bytes."""
    per_state = spec.state_content_bytes or natural_state_bytes
    return spec.num_kv_heads * (spec.block_size // spec.tokens_per_state) * per_state


def aligned_page(spec: Any) -> int:
    """The page a block takes: padded where a spec says, else rounded up to its alignment."""
    if spec.page_size_padded is not None:
        return int(spec.page_size_padded)
    unit = spec.alignment or 1
    return -(-spec.real_page_size_bytes // unit) * unit
