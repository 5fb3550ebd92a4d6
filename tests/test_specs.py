"""KV cache specs: page sizes, per-request memory, merge rules (reference §9.5, §10.2)."""

from __future__ import annotations

import pytest

from kvcore.group_specs import UniformTypeKVCacheSpecs
from kvcore.sizing.grouping import is_kv_cache_spec_uniform
from kvcore.specs import (
    ChunkedLocalAttentionSpec,
    CrossAttentionSpec,
    EncoderOnlyAttentionSpec,
    FullAttentionSpec,
    MambaSpec,
    MLAAttentionSpec,
    SizingContext,
    SlidingWindowSpec,
)


def full(**kw):
    base = {"block_size": 16, "num_kv_heads": 2, "head_size": 64, "dtype": "float32"}
    base.update(kw)
    return FullAttentionSpec(**base)


def swa(window=1, **kw):
    base = {"block_size": 16, "num_kv_heads": 2, "head_size": 64, "dtype": "float32"}
    base.update(kw)
    return SlidingWindowSpec(**base, sliding_window=window)


def test_page_sizes() -> None:
    # 2 (K and V) * 16 tokens * 2 heads * 64 * 4 bytes
    assert full().page_size_bytes == 16384
    assert FullAttentionSpec(16, 8, 128, "bfloat16").page_size_bytes == 2 * 16 * 8 * 128 * 2
    assert FullAttentionSpec(16, 8, 128, "fp8").page_size_bytes == 2 * 16 * 8 * 128
    # MLA: one latent vector, no factor 2; DeepSeek's fp8 layout is 656 bytes a token.
    assert MLAAttentionSpec(64, 1, 576, "bfloat16").page_size_bytes == 64 * 576 * 2
    assert MLAAttentionSpec(64, 1, 576, "fp8", cache_dtype_str="fp8_ds_mla"
                            ).page_size_bytes == 64 * 656
    m = MambaSpec(16, shapes=((3, 8192), (8192, 16)), dtypes=("bfloat16", "float32"))
    assert m.page_size_bytes == 3 * 8192 * 2 + 8192 * 16 * 4
    assert MambaSpec(16, shapes=((3, 4),), dtypes=("float32",),
                     page_size_padded=1000).page_size_bytes == 1000
    assert full(page_size_padded=20000).page_size_bytes == 20000


def test_max_memory_usage_per_spec() -> None:
    ctx = SizingContext(max_model_len=16384, max_num_batched_tokens=1024,
                        max_concurrent_batches=1, max_num_encoder_input_tokens=1500)
    p = 16384
    assert full().max_memory_usage_bytes(ctx) == 1024 * p
    # (cdiv(min(W - 1 + in flight, max_model_len), bs) + 1) pages: W=1024 -> 128 + 1
    assert swa(1024).max_memory_usage_bytes(ctx) == 129 * p
    # Async scheduling doubles the tokens in flight: cdiv(1023 + 2048, 16) + 1 = 193
    ctx2 = SizingContext(max_model_len=16384, max_num_batched_tokens=1024,
                         max_concurrent_batches=2)
    assert swa(1024).max_memory_usage_bytes(ctx2) == 193 * p
    # A window longer than the model: capped at max_model_len, + 1
    assert swa(100000).max_memory_usage_bytes(ctx) == 1025 * p
    chunk = ChunkedLocalAttentionSpec(16, 2, 64, "float32", attention_chunk_size=8192)
    assert chunk.max_memory_usage_bytes(ctx) == (8192 + 1024) // 16 * p
    assert EncoderOnlyAttentionSpec(16, 2, 64, "float32").max_memory_usage_bytes(ctx) == 0
    assert CrossAttentionSpec(16, 2, 64, "float32").max_memory_usage_bytes(ctx) == 94 * p
    m = MambaSpec(16, shapes=((10,),), dtypes=("float32",), num_speculative_blocks=1)
    assert m.max_memory_usage_bytes(ctx) == 40 * 3  # align mode: 2 + speculative states
    none = SizingContext(max_model_len=16384, mamba_cache_mode="none")
    assert m.max_memory_usage_bytes(none) == 40 * 2


def test_merge_rules() -> None:
    # test_merge_kv_cache_spec: head-count or kind mismatch -> AssertionError
    with pytest.raises(AssertionError):
        full().merge([full(), full(num_kv_heads=4)])
    with pytest.raises(AssertionError):
        full().merge([full(), swa()])
    # different windows on full layers -> ValueError; a window with None keeps the window
    with pytest.raises(ValueError):
        full().merge([full(sliding_window=1), full(sliding_window=2)])
    assert full().merge([full(sliding_window=1), full()]).sliding_window == 1
    assert full().merge([full(), full(attention_chunk_size=8)]).attention_chunk_size == 8
    with pytest.raises(AssertionError):
        full().merge([full(sliding_window=1), full(attention_chunk_size=8)])
    with pytest.raises(AssertionError):
        swa(1).merge([swa(1), swa(2)])
    # test_merge_mla_spec
    mla = MLAAttentionSpec(16, 1, 576, "bfloat16", cache_dtype_str="auto")
    assert mla.merge([mla, mla]) == mla
    with pytest.raises(AssertionError):
        mla.merge([mla, MLAAttentionSpec(16, 1, 576, "bfloat16", cache_dtype_str="fp8")])
    with pytest.raises(AssertionError):
        mla.merge([mla, FullAttentionSpec(16, 1, 576, "bfloat16")])


def test_is_uniform() -> None:
    assert is_kv_cache_spec_uniform({"a": full(), "b": full(sliding_window=1)})
    assert not is_kv_cache_spec_uniform({"a": full(), "b": swa(1)})
    assert not is_kv_cache_spec_uniform({"a": swa(1), "b": swa(2)})


def test_uniform_type_specs() -> None:
    # test_generate_uniform_type_kv_cache_specs
    u = UniformTypeKVCacheSpecs.from_specs({"a": full(), "b": full(head_size=128)})
    assert u is not None and u.page_size_bytes == 16384 + 32768
    assert UniformTypeKVCacheSpecs.from_specs({"a": full(), "b": swa(1)}) is None
    assert UniformTypeKVCacheSpecs.from_specs({"a": swa(1), "b": full()}) is None
    assert UniformTypeKVCacheSpecs.from_specs({"a": swa(1), "b": swa(1, num_kv_heads=4)})
    assert UniformTypeKVCacheSpecs.from_specs({"a": swa(1), "b": swa(2)}) is None
    assert UniformTypeKVCacheSpecs.from_specs({"a": full(), "b": full(block_size=32)}) is None
    ctx = SizingContext(max_model_len=64)
    # max pages over members (4 each) times the summed page
    assert u.max_memory_usage_bytes(ctx) == 4 * (16384 + 32768)
