"""`get_kv_cache_coordinator`: which coordinator a KV cache config gets (vLLM's factory in
`kv_cache_coordinator.py`, 0.33): caching off, any number of groups -> no prefix cache; one
group -> unitary; several -> hybrid. Apart from `kvcore.coordinator` because it names every
kind, the hybrid one included (`kvcore.hybrid_coordinator` builds on `kvcore.coordinator`).
"""

from __future__ import annotations

from kvcore.coordinator import (
    KVCacheCoordinator,
    KVCacheCoordinatorNoPrefixCache,
    UnitaryKVCacheCoordinator,
)
from kvcore.hybrid_coordinator import HybridKVCacheCoordinator


def get_kv_cache_coordinator(kv_cache_config, max_model_len: int, enable_caching: bool,
                             enable_kv_cache_events: bool, scheduler_block_size: int,
                             hash_block_size: int, **kw) -> KVCacheCoordinator:
    if not enable_caching:
        return KVCacheCoordinatorNoPrefixCache(kv_cache_config, max_model_len,
                                               enable_kv_cache_events, scheduler_block_size,
                                               hash_block_size, **kw)
    if len(kv_cache_config.kv_cache_groups) == 1:
        return UnitaryKVCacheCoordinator(kv_cache_config, max_model_len, True,
                                         enable_kv_cache_events, scheduler_block_size,
                                         hash_block_size, **kw)
    return HybridKVCacheCoordinator(kv_cache_config, max_model_len, True,
                                    enable_kv_cache_events, scheduler_block_size,
                                    hash_block_size, **kw)
