"""vLLM 0.33's full-allocation fallback (`_try_get_full_allocation_fallback_groups`,
v1/core/kv_cache_planning.py): where page sizes cannot be unified (an MLA page that does not
divide the largest), `get_kv_cache_groups` tries, before it fails, to give the sliding-window
layers full attention's memory (their compute keeps the window) and put every layer in one
uniform-type group. Only MLA beside plain sliding-window layers qualifies: an MLA target with
an EAGLE draft of a sliding layer (tests/data/eagle_mla_fallback/).
"""

from __future__ import annotations

from kvcore.group_specs import UniformTypeKVCacheSpecs
from kvcore.specs import (
    AttentionSpec,
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KVCacheGroupSpec,
    KVCacheSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
)
from kvcore.window_mla_spec import SlidingWindowMLASpec


def full_allocation_groups(specs: dict[str, KVCacheSpec]) -> list[KVCacheGroupSpec] | None:
    """One group of every layer, the sliding ones promoted to full attention, where vLLM's
    fallback takes `specs` (a chunked-local layer, a sliding MLA layer (DeepSeek-V4's), or no
    MLA or no sliding layer: None; kvcli models no hidden-state cache, vLLM's third refusal)."""
    values = specs.values()
    if any(isinstance(s, (ChunkedLocalAttentionSpec, SlidingWindowMLASpec)) for s in values):
        return None
    if not (any(isinstance(s, MLAAttentionSpec) for s in values)
            and any(isinstance(s, SlidingWindowSpec) for s in values)):
        return None
    uniform = UniformTypeKVCacheSpecs.from_specs(promote_local_specs(specs))
    return None if uniform is None else [KVCacheGroupSpec(tuple(specs), uniform)]


def promote_local_specs(specs: dict[str, KVCacheSpec]) -> dict[str, KVCacheSpec]:
    """vLLM's `_promote_local_kv_cache_specs` (the fallback's and
    --disable-hybrid-kv-cache-manager's), where full layers sit beside sliding-window or
    chunked-local ones: each local layer a full one that keeps its window or chunk (its compute
    unchanged), at the full layers' block size where they share one, its padded page scaled."""
    values = specs.values()
    if not (any(isinstance(s, FullAttentionSpec) for s in values) and any(
            isinstance(s, (SlidingWindowSpec, ChunkedLocalAttentionSpec)) for s in values)):
        return specs
    full_blocks = {s.block_size for s in values if isinstance(s, FullAttentionSpec)}
    full_block = next(iter(full_blocks)) if len(full_blocks) == 1 else None
    out = dict(specs)
    for name, s in specs.items():
        if isinstance(s, (SlidingWindowSpec, ChunkedLocalAttentionSpec)):
            block = full_block or s.block_size
            out[name] = FullAttentionSpec(
                block, s.num_kv_heads, s.head_size, s.dtype, _padded(s, block), s.head_size_v,
                sliding_window=s.sliding_window if isinstance(s, SlidingWindowSpec) else None,
                attention_chunk_size=s.attention_chunk_size
                if isinstance(s, ChunkedLocalAttentionSpec) else None)
    return out


def _padded(s: AttentionSpec, block: int) -> int | None:
    """A padded page at the new block size: the padding, or the real page if larger."""
    if s.page_size_padded is None:
        return None
    return max(s.page_size_padded, s.real_page_size_bytes * block // s.block_size)
