"""`PrefixCacheControl`: the prefix cache as the engine sees it besides allocation, the root of
`kvcore.kv_cache_manager.KVCacheManager` (vLLM keeps it in that one class; split here so that
each file reads as one idea).

It holds the coordinator and its pool, and answers for what the prefix cache tells and what may
be done to it from outside the scheduler's per-request protocol:

* its hit counters (`PrefixCacheStats`, with ``log_stats``): one lookup counted per admission
  (`record_prefix_cache_stats`), handed over and replaced by fresh ones
  (`make_prefix_cache_stats`);
* its KV events (`take_events`): the pool's, each `BlockStored` annotated with its group's spec
  kind and sliding window;
* its control: a reset (`reset_prefix_cache`, refused while a request holds blocks) and the
  eviction of given blocks' hashes (`evict_blocks`, e.g. after a failed KV load).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from kvcore.kv_events import BlockStored, KVCacheEvent
from kvcore.managers.registry import spec_kind, spec_sliding_window
from kvcore.prefix_cache_stats import PrefixCacheStats

if TYPE_CHECKING:
    from kvcore.coordinator import KVCacheCoordinator
    from kvcore.kv_cache_config import KVCacheGroupSpec
    from kvcore.request import Request


class PrefixCacheControl:
    def __init__(self, coordinator: KVCacheCoordinator, groups: list[KVCacheGroupSpec],
                 enable_caching: bool, log_stats: bool) -> None:
        self.coordinator = coordinator
        self.block_pool = coordinator.block_pool
        self.enable_caching = enable_caching
        self.log_stats = log_stats
        self.prefix_cache_stats = PrefixCacheStats() if log_stats else None
        self.kv_cache_event_metadata = tuple(
            (spec_kind(g.kv_cache_spec), spec_sliding_window(g.kv_cache_spec)) for g in groups)

    # --- stats ------------------------------------------------------------------------
    def make_prefix_cache_stats(self) -> PrefixCacheStats | None:
        """The stats since the last call, replaced by fresh ones (None without log_stats)."""
        if not self.log_stats:
            return None
        stats, self.prefix_cache_stats = self.prefix_cache_stats, PrefixCacheStats()
        return stats

    def record_prefix_cache_stats(self, request: Request, num_hits: int) -> None:
        """Count one admission's lookup (0.33 records at admission, never on a refused try)."""
        if not self.log_stats or not self.enable_caching or request.skip_reading_prefix_cache:
            return
        self.prefix_cache_stats.record(request.num_tokens, num_hits,  # type: ignore[union-attr]
                                       request.num_preemptions > 0)

    # --- events and control -----------------------------------------------------------
    def evict_blocks(self, block_ids: Iterable[int]) -> None:
        """Drop these blocks' hashes from the prefix cache (e.g. a failed KV load)."""
        self.block_pool.evict_blocks(block_ids)

    def reset_prefix_cache(self) -> bool:
        """Forget every cached hash; False (nothing done) while any request holds blocks."""
        if not self.coordinator.reset_prefix_cache():
            return False
        if self.log_stats:
            self.prefix_cache_stats.reset = True  # type: ignore[union-attr]
        return True

    def take_events(self) -> list[KVCacheEvent]:
        """Drain the KV events, each `BlockStored` annotated with its group's spec kind."""
        events = self.block_pool.take_events()
        meta = self.kv_cache_event_metadata
        for ev in events:
            if isinstance(ev, BlockStored) and ev.group_idx is not None \
                    and 0 <= ev.group_idx < len(meta):
                ev.kv_cache_spec_kind, ev.kv_cache_spec_sliding_window = meta[ev.group_idx]
        return events
