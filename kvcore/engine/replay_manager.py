"""The replay's `KVCacheManager`, built from its options: vLLM's KVCacheManager arguments as
the Scheduler hands them over (scheduler.py:350-370), the EAGLE settings from the drafts, the
opt-in shared-prefix Mamba checkpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay_pool import concurrent_batches
from kvcore.engine.scheduler_io import NO_MODEL_LEN_LIMIT
from kvcore.engine.spec_decode import eagle_block_drop, eagle_group_ids
from kvcore.kv_cache_manager import KVCacheManager
from kvcore.specs import KVCacheGroupSpec

if TYPE_CHECKING:
    from kvcore.tracing import BlockTracer


def replay_manager(cfg: ReplayOptions, groups: list[KVCacheGroupSpec], num_blocks: int,
                   hash_block_size: int, tracer: BlockTracer | None,
                   kv_events: bool) -> KVCacheManager:
    """The manager of a replay's pool (``kv_events``: vLLM's KV events are taken)."""
    return KVCacheManager(
        groups, cfg.max_model_len or NO_MODEL_LEN_LIMIT, num_blocks=num_blocks,
        hash_block_size=hash_block_size, enable_caching=cfg.enable_prefix_caching,
        log_stats=True, enable_kv_cache_events=kv_events,
        max_in_flight_tokens=concurrent_batches(cfg) * cfg.max_num_batched_tokens,
        watermark=cfg.watermark, tracer=tracer,
        use_eagle=eagle_block_drop(cfg), eagle_group_ids=eagle_group_ids(cfg, groups),
        prefix_cache_retention_interval=cfg.prefix_cache_retention_interval,
        enable_mamba_shared_prefix_checkpoint=cfg.enable_mamba_shared_prefix_checkpoint)
