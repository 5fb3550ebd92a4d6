"""KV cache specs: what one layer keeps per block, and how many bytes a block costs.

vLLM's `vllm/v1/kv_cache_interface.py` in words: every spec is a frozen dataclass with a
`block_size`; attention specs add the KV geometry. A manager is chosen by the spec's type
(see `kvcore.managers.registry`). Sizing (`page_size_bytes`, `max_memory_usage_bytes`,
merging) is extended by the sizing layer (`kvcore.sizing`).
"""

from __future__ import annotations

from dataclasses import dataclass

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "fp8": 1, "float8_e4m3fn": 1,
               "float8_e5m2": 1, "int8": 1, "uint8": 1}


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True, slots=True)
class KVCacheSpec:
    block_size: int

    @property
    def page_size_bytes(self) -> int:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class AttentionSpec(KVCacheSpec):
    num_kv_heads: int = 1
    head_size: int = 1
    dtype: str = "float32"

    @property
    def page_size_bytes(self) -> int:
        # K and V: the factor 2.
        return 2 * self.block_size * self.num_kv_heads * self.head_size * DTYPE_BYTES[self.dtype]


@dataclass(frozen=True, slots=True)
class FullAttentionSpec(AttentionSpec):
    # Set only when layers of different kinds were unified into one full-attention layout.
    sliding_window: int | None = None
    attention_chunk_size: int | None = None


@dataclass(frozen=True, slots=True)
class SlidingWindowSpec(AttentionSpec):
    sliding_window: int = 0


@dataclass(frozen=True, slots=True)
class ChunkedLocalAttentionSpec(AttentionSpec):
    attention_chunk_size: int = 0


@dataclass(frozen=True, slots=True)
class KVCacheGroupSpec:
    """Layers that share one block table (and one manager)."""

    layer_names: tuple[str, ...]
    kv_cache_spec: KVCacheSpec
