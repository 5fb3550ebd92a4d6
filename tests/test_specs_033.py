"""The specs of vLLM 0.33's newer managers: sizes, merges, and which groups set the hash block
(vllm/v1/kv_cache_interface.py: CircularBufferSpec, RSWASpec; kv_cache_utils.py's hash block)."""

from __future__ import annotations

import pytest

from kvcore.kv_cache_config import KVCachePoolConfig
from kvcore.kv_cache_manager import KVCacheManager
from kvcore.specs import (
    CircularBufferSpec,
    FullAttentionSpec,
    KVCacheGroupSpec,
    RSWASpec,
    SizingContext,
)

CTX = SizingContext(max_model_len=16384, max_num_batched_tokens=1024)


def test_circular_buffer_holds_one_page_a_request() -> None:
    ring = CircularBufferSpec(block_size=64, num_kv_heads=1, head_size=512, dtype="bfloat16")
    assert ring.page_size_bytes == 2 * 64 * 512 * 2 == 131072
    assert ring.max_memory_usage_bytes(CTX) == 131072          # not 16384 / 64 pages
    assert not ring.prefix_cacheable and FullAttentionSpec(block_size=16).prefix_cacheable


def test_rswa_is_sized_as_full_attention() -> None:
    rswa = RSWASpec(block_size=16, num_kv_heads=8, head_size=128, dtype="bfloat16",
                    rswa_window=1024)
    full = FullAttentionSpec(block_size=16, num_kv_heads=8, head_size=128, dtype="bfloat16")
    assert rswa.max_memory_usage_bytes(CTX) == full.max_memory_usage_bytes(CTX) == 1024 * 65536


def test_rswa_merge_keeps_the_window_and_refuses_two() -> None:
    a = RSWASpec(block_size=16, rswa_window=512)
    merged = RSWASpec.merge([a, RSWASpec(block_size=16, rswa_window=512)])
    assert isinstance(merged, RSWASpec) and merged.rswa_window == 512
    with pytest.raises(AssertionError, match="same rswa_window"):
        RSWASpec.merge([a, RSWASpec(block_size=16, rswa_window=256)])
    with pytest.raises(AssertionError, match="must be RSWASpec"):
        RSWASpec.merge([a, FullAttentionSpec(block_size=16)])


def test_a_ring_does_not_set_the_hash_block() -> None:
    """vLLM hashes at the gcd of the prefix-cacheable groups' blocks (a ring of 6 beside full
    attention's 4 leaves it at 4, not 2); the scheduler block stays the lcm of all (12)."""
    cfg = KVCachePoolConfig(64, [KVCacheGroupSpec(("f",), FullAttentionSpec(block_size=4)),
                                 KVCacheGroupSpec(("r",), CircularBufferSpec(block_size=6))])
    mgr = KVCacheManager(cfg, max_model_len=256)
    assert (mgr.hash_block_size, mgr.coordinator.scheduler_block_size) == (4, 12)
