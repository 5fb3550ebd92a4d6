"""KV cache specs: what one layer keeps per block, and how many bytes a block costs.

vLLM's `vllm/v1/kv_cache_interface.py` in words. Every spec is a frozen dataclass with a
`block_size`; attention specs add the KV geometry; a manager is chosen by the spec's type
(`kvcore.managers.registry`). Each spec answers three questions:

* ``page_size_bytes``: bytes one block of this layer occupies;
* ``max_memory_usage_bytes(ctx)``: bytes one request at ``ctx.max_model_len`` can hold at most
  (what the memory check and the max-concurrency figure use);
* ``merge(specs)``: the one spec that stands for several layers in a group, or an error when the
  layers cannot share a block table (``AssertionError`` for a different kind or geometry,
  ``ValueError`` for full-attention layers with different windows, as in vLLM).

Dtypes are strings ("bfloat16", "fp8", ...), sized by ``DTYPE_BYTES``. `KVCacheGroupSpec` and
the config records are `kvcore.kv_cache_config`'s, `SizingContext` `kvcore.sizing_context`'s
(both re-exported here), `UniformTypeKVCacheSpecs` `kvcore.group_specs`'s, DeepSeek-V4's
sliding window over MLA states `kvcore.window_mla_spec`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from kvcore.kv_cache_config import KVCacheConfig, KVCacheGroupSpec, KVCacheTensor
from kvcore.sizing_context import SizingContext
from kvcore.state_pages import aligned_page, state_page

__all__ = [
    "DTYPE_BYTES", "AttentionSpec", "ChunkedLocalAttentionSpec", "CircularBufferSpec",
    "CrossAttentionSpec", "EncoderOnlyAttentionSpec", "FullAttentionSpec", "KVCacheConfig",
    "KVCacheGroupSpec", "KVCacheSpec", "KVCacheTensor", "MLAAttentionSpec", "MambaSpec",
    "RSWASpec", "SinkFullAttentionSpec", "SizingContext", "SlidingWindowSpec", "cdiv",
]

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "fp8": 1, "float8_e4m3fn": 1,
               "float8_e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1, "uint8": 1}


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True, slots=True)
class KVCacheSpec:
    block_size: int

    kind = "base"  # a short name used in output and in the manager registry's messages
    # Whether the group takes part in prefix caching (vLLM 0.33: all but a circular buffer);
    # only those set the hash block (`hashing_block_sizes`)
    prefix_cacheable = True

    @property
    def page_size_bytes(self) -> int:
        raise NotImplementedError

    def max_memory_usage_bytes(self, ctx: SizingContext) -> int:
        raise NotImplementedError

    def copy_with_new_block_size(self, block_size: int) -> KVCacheSpec:
        return replace(self, block_size=block_size)

    @classmethod
    def merge(cls, specs: list[KVCacheSpec]) -> KVCacheSpec:
        """Layers of most kinds share a group only when their specs are identical."""
        if not all(s == specs[0] for s in specs[1:]):
            raise AssertionError("All layers in the same KV cache group must be the same.")
        return specs[0]


@dataclass(frozen=True, slots=True)
class AttentionSpec(KVCacheSpec):
    num_kv_heads: int = 1
    head_size: int = 1
    dtype: str = "float32"
    # vLLM 0.33 pads a page up to a common size (Mamba, or attention pages that do not divide).
    page_size_padded: int | None = None
    # V's width where it is not K's (vLLM's head_size_v: MiMo-V2's 128 beside 192); None: K's
    head_size_v: int | None = None

    kind = "attention"

    @property
    def real_page_size_bytes(self) -> int:
        v = self.head_size if self.head_size_v is None else self.head_size_v
        return self.block_size * self.num_kv_heads * (self.head_size + v) * DTYPE_BYTES[self.dtype]

    @property
    def page_size_bytes(self) -> int:
        padded = self.page_size_padded
        return self.real_page_size_bytes if padded is None else padded

    def _same_geometry(self, other: AttentionSpec) -> bool:
        return (self.block_size, self.num_kv_heads, self.head_size, self.dtype,
                self.page_size_padded, self.head_size_v) == (
                    other.block_size, other.num_kv_heads, other.head_size, other.dtype,
                    other.page_size_padded, other.head_size_v)


def _one_window(values: set[int]) -> int | None:
    if len(values) > 1:
        raise ValueError("All attention layers in the same KV cache group must have the same "
                         f"window size (got {sorted(values)}).")
    return next(iter(values), None)


@dataclass(frozen=True, slots=True)
class FullAttentionSpec(AttentionSpec):
    # Set only when layers of different kinds were unified into one full-attention layout
    # (vLLM's --disable-hybrid-kv-cache-manager): memory for every token, windowed compute.
    sliding_window: int | None = None
    attention_chunk_size: int | None = None

    kind = "full"

    def max_memory_usage_bytes(self, ctx: SizingContext) -> int:
        return cdiv(ctx.max_model_len, self.block_size) * self.page_size_bytes

    @classmethod
    def merge(cls, specs: list[KVCacheSpec]) -> KVCacheSpec:
        full = [s for s in specs if isinstance(s, FullAttentionSpec)]
        if len(full) != len(specs):
            raise AssertionError("All attention layers in the same KV cache group must be "
                                 "FullAttentionSpec.")
        first = full[0]
        mla = [isinstance(s, MLAAttentionSpec) for s in full]
        if any(mla) and not all(mla):
            raise AssertionError("MLA and non-MLA layers cannot share a KV cache group.")
        window = _one_window({s.sliding_window for s in full if s.sliding_window is not None})
        chunk = _one_window({s.attention_chunk_size for s in full
                             if s.attention_chunk_size is not None})
        if not all(first._same_geometry(s) for s in full):
            raise AssertionError("All attention layers in the same KV cache group must have the "
                                 "same attention spec.")
        if window is not None and chunk is not None:
            raise AssertionError("Model with both sliding window layers and chunked local "
                                 "attention layers is not supported.")
        return replace(first, sliding_window=window, attention_chunk_size=chunk)


@dataclass(frozen=True, slots=True)
class MLAAttentionSpec(FullAttentionSpec):
    """Multi-head latent attention: one latent vector per token, so no factor 2 for K and V."""

    cache_dtype_str: str | None = None
    # vLLM's is_index_group_leader: a sparse layer with its own indexer (IndexCache's layers
    # reusing another's top-k are not); it sets the spec apart, not its page
    index_group_leader: bool = False
    # DeepSeek-V4's (`kvcore.state_pages`, `kvcore.window_mla_spec`): defaults change nothing
    tokens_per_state: int = 1
    state_content_bytes: int | None = None
    alignment: int | None = None
    block_stride_alignment: int | None = None
    model_version: str | None = None

    kind = "mla"

    @property
    def real_page_size_bytes(self) -> int:
        if self.cache_dtype_str == "fp8_ds_mla" and self.state_content_bytes is None:
            return self.block_size * 656    # (DeepSeek-V3.2's fp8 MLA layout: 656 B a token)
        return state_page(self, self.head_size * DTYPE_BYTES[self.dtype])

    @property
    def page_size_bytes(self) -> int:
        return aligned_page(self)

    @classmethod
    def merge(cls, specs: list[KVCacheSpec]) -> KVCacheSpec:
        mla = [s for s in specs if isinstance(s, MLAAttentionSpec)]
        if len(mla) != len(specs):
            raise AssertionError("All attention layers in the same KV cache group must be "
                                 "MLAAttentionSpec.")
        if len({s.cache_dtype_str for s in mla}) != 1:
            raise AssertionError("All MLA layers in the same KV cache group must use the same "
                                 "quantization method.")
        # FullAttentionSpec's merge, bound to this class (a slots dataclass: no bare super())
        return FullAttentionSpec.merge.__func__(cls, specs)  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class RSWASpec(FullAttentionSpec):
    """Reference sliding window (vLLM 0.33): the prompt stays visible for ever, generated tokens
    only the last ``rswa_window``. Sized as full attention (prompt + window <= max_model_len)."""

    rswa_window: int = 0

    kind = "rswa"

    @classmethod
    def merge(cls, specs: list[KVCacheSpec]) -> KVCacheSpec:
        if not all(isinstance(s, RSWASpec) for s in specs):
            raise AssertionError("All attention layers in the same KV cache group must be "
                                 "RSWASpec.")
        windows = {s.rswa_window for s in specs}  # type: ignore[attr-defined]
        if len(windows) != 1:
            raise AssertionError(f"All R-SWA layers must share the same rswa_window, got {windows}")
        # (full attention's merge keeps the first spec's type and fields: its window included)
        return FullAttentionSpec.merge(specs)


@dataclass(frozen=True, slots=True)
class SinkFullAttentionSpec(FullAttentionSpec):
    """Full attention behind ``sink_len`` static sink tokens (vLLM 0.33's static sink layers).
    vLLM 0.33 cannot build its manager (see `kvcore.managers.registry`)."""

    sink_len: int | None = None

    kind = "sink_full"


@dataclass(frozen=True, slots=True)
class SlidingWindowSpec(AttentionSpec):
    sliding_window: int = 0

    kind = "sliding_window"

    def max_memory_usage_bytes(self, ctx: SizingContext) -> int:
        # The last W-1 computed tokens plus everything in flight; +1 block because the window
        # need not start on a block boundary ([XXCD][EF] holds the window CDEF with bs 4).
        tokens = min(self.sliding_window - 1 + ctx.max_in_flight_tokens, ctx.max_model_len)
        return (cdiv(tokens, self.block_size) + 1) * self.page_size_bytes


@dataclass(frozen=True, slots=True)
class ChunkedLocalAttentionSpec(AttentionSpec):
    attention_chunk_size: int = 0

    kind = "chunked_local"

    def max_memory_usage_bytes(self, ctx: SizingContext) -> int:
        tokens = min(self.attention_chunk_size + ctx.max_in_flight_tokens, ctx.max_model_len)
        return cdiv(tokens, self.block_size) * self.page_size_bytes


@dataclass(frozen=True, slots=True)
class CircularBufferSpec(AttentionSpec):
    """A ring of ``block_size`` slots, one block per request for its whole life (vLLM 0.33:
    the raw keys of the token group a compressing layer has not compressed yet). Never cached."""

    kind = "circular_buffer"
    prefix_cacheable = False

    def max_memory_usage_bytes(self, ctx: SizingContext) -> int:
        return self.page_size_bytes


@dataclass(frozen=True, slots=True)
class EncoderOnlyAttentionSpec(AttentionSpec):
    """Bidirectional encoder layers: attention, but nothing is kept between steps."""
    kind = "encoder_only"

    def max_memory_usage_bytes(self, ctx: SizingContext) -> int:
        return 0


@dataclass(frozen=True, slots=True)
class CrossAttentionSpec(AttentionSpec):
    """Decoder layers attending to encoder states (Whisper): sized by the encoder input."""

    kind = "cross_attention"

    def max_memory_usage_bytes(self, ctx: SizingContext) -> int:
        return cdiv(ctx.max_num_encoder_input_tokens, self.block_size) * self.page_size_bytes


@dataclass(frozen=True, slots=True)
class MambaSpec(KVCacheSpec):
    """A recurrent layer's state: a fixed number of bytes per request, whatever its length.

    ``shapes``/``dtypes`` are the state tensors (conv state, SSM state) of ONE request on one
    worker; a block holds one state. ``block_size`` is how many tokens a state stands for
    (vLLM: the attention block size in ``align`` mode, max_model_len otherwise). Mamba2 declares
    a prefill checkpoint block (a state written inside a prefill chunk).
    """

    shapes: tuple[tuple[int, ...], ...] = ()
    dtypes: tuple[str, ...] = ()
    page_size_padded: int | None = None
    mamba_type: str = "mamba2"
    num_speculative_blocks: int = 0
    num_prefill_checkpoint_blocks: int = 0
    prefill_checkpoint_alignment: int | None = None

    kind = "mamba"

    @property
    def real_page_size_bytes(self) -> int:
        return sum(math.prod(s) * DTYPE_BYTES[d] for s, d in zip(self.shapes, self.dtypes))

    @property
    def page_size_bytes(self) -> int:
        padded = self.page_size_padded
        return self.real_page_size_bytes if padded is None else padded

    def max_memory_usage_bytes(self, ctx: SizingContext) -> int:
        # 0.33: constant per request. "align" mode keeps the running state, the last aligned
        # one and the declared prefill checkpoint blocks; "none" keeps one.
        base = 2 + self.num_prefill_checkpoint_blocks if ctx.mamba_cache_mode == "align" else 1
        return self.page_size_bytes * (base + self.num_speculative_blocks)
