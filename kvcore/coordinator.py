"""Coordinators: fan the facade's calls out to one manager per KV cache group.

vLLM's `kv_cache_coordinator.py` (0.33). The coordinator owns the one `BlockPool` every group
draws from. Three kinds, chosen by `kvcore.coordinator_choice.get_kv_cache_coordinator`:

* `KVCacheCoordinatorNoPrefixCache`: caching disabled; never hits; any number of groups.
* `UnitaryKVCacheCoordinator`: one group; its manager's lookup is the answer.
* `HybridKVCacheCoordinator` (`kvcore.hybrid_coordinator`): several groups. Groups with an
  equal spec are looked up together (every one of them must hold a block); the spec groups are
  visited full attention first, each lookup capped by the length the previous one reached,
  until a whole round changes nothing (0.33's fixed point). Full attention is looked up once:
  any prefix of its hit is a hit.

With partial hash hits (`kvcore.prefix_match`, several groups) hits land on the hash block, full
attention is `FineFullAttentionManager` and the pool keeps blocks under several keys.

EAGLE's block drop (``use_eagle``: vLLM's `use_eagle_block_drop`, the legacy hash mode) applies
to the groups flagged as holding the draft's layers (``eagle_group_ids``: vLLM's
`is_eagle_group`), or to every group when none is flagged (kv_cache_coordinator.py:128-137);
without ``use_eagle`` (lookahead hashes) the groups stay flagged and none drops.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from kvcore.block import KVCacheBlock
from kvcore.block_pool import BlockPool
from kvcore.managers.base import SingleTypeKVCacheManager
from kvcore.managers.full_attention import FullAttentionManager
from kvcore.managers.mamba import MambaManager
from kvcore.managers.registry import fine_manager_class, get_manager_class
from kvcore.partial_hashes import PartialHashes
from kvcore.prefix_match import partial_hash_hits
from kvcore.retention import check_retention_interval

if TYPE_CHECKING:
    from kvcore.request import Request
    from kvcore.tracing import BlockTracer


class KVCacheCoordinator:
    """Shared plumbing: the pool, one manager per group, and the fan-out calls."""

    # Cached prefixes are rounded down to a multiple of this (hybrid: the scheduler block).
    cacheable_alignment = 1
    # Hybrid EAGLE: per group, whether it caches past that rounding (`hybrid_coordinator`)
    eagle_caching: tuple[bool, ...] = ()
    # Tokens a lookup may read past its length cap (hybrid EAGLE's dropped block)
    lookup_margin = 0

    def __init__(self, kv_cache_config, max_model_len: int, enable_caching: bool,
                 enable_kv_cache_events: bool, scheduler_block_size: int, hash_block_size: int,
                 max_in_flight_tokens: int | None = None, use_eagle: bool = False,
                 tracer: BlockTracer | None = None, retention_interval: int | None = None,
                 eagle_group_ids: Iterable[int] = ()) -> None:
        groups = list(kv_cache_config.kv_cache_groups)
        check_retention_interval(retention_interval, scheduler_block_size,
                                 [g.kv_cache_spec for g in groups])
        self.kv_cache_config = kv_cache_config
        assert scheduler_block_size % hash_block_size == 0
        assert all(scheduler_block_size % g.kv_cache_spec.block_size == 0 for g in groups)
        self.scheduler_block_size = scheduler_block_size
        self.hash_block_size = hash_block_size
        self.enable_caching = enable_caching
        self.use_eagle = use_eagle
        # the groups flagged as the draft's (all when none is, with the drop); those dropping
        flagged = frozenset(eagle_group_ids)
        if use_eagle and not flagged:
            flagged = frozenset(range(len(groups)))
        self.eagle_group_ids = flagged
        self.drop_eagle_group_ids = flagged if use_eagle else frozenset()
        self.block_pool = BlockPool(kv_cache_config.num_blocks, enable_caching, hash_block_size,
                                    enable_kv_cache_events, tracer=tracer, num_groups=len(groups))
        in_flight = max_model_len if max_in_flight_tokens is None else max_in_flight_tokens
        # vLLM's enable_partial_hash_hits (`kvcore.prefix_match`): hits inside a block, on
        # the hash block's grid; else hybrid hits end on the scheduler block (the groups' lcm)
        self.partial_hits = enable_caching and len(groups) > 1 and partial_hash_hits(
            [g.kv_cache_spec for g in groups], hash_block_size, True)
        self.hit_alignment = hash_block_size if self.partial_hits else scheduler_block_size
        classes = []
        fine = False            # (a manager keying blocks below its block size)
        for g in groups:
            cls = get_manager_class(g.kv_cache_spec)
            size = g.kv_cache_spec.block_size
            if enable_caching and (
                    size != hash_block_size and (self.partial_hits or cls is FullAttentionManager)
                    or cls is MambaManager
                    and not size == hash_block_size == scheduler_block_size):
                # (vLLM's full attention registers a prompt's tail inside a block coarser
                # than the hash block whether or not hits may land there:
                # FullAttentionManager.cache_blocks; tests/data/sched_spec_eagle_mixed/. Its
                # Mamba manager keys the prompt's last hash boundary whatever the hits too,
                # which the retention mask on the lcm may have left out when the Mamba block
                # is finer (MambaManager._cache_partial_tail_block; sched_mamba_mixed/), and
                # re-keys a Mamba2 checkpoint block through the pool's partial entries, a
                # BlockStored of the hash block, wherever the hash block is finer than its
                # own, partial hits or not (sched_spec_mtp_mixed/: mtpu48, mtpu48nu))
                cls, fine = fine_manager_class(cls), True
            classes.append(cls)
        if fine:
            self.block_pool.partial = PartialHashes(self.block_pool)
        managers = []
        for i, (g, cls) in enumerate(zip(groups, classes)):
            managers.append(cls(g.kv_cache_spec, self.block_pool, enable_caching, i,
                                scheduler_block_size=scheduler_block_size,
                                max_admission_blocks_per_request=cls.admission_cap(
                                    g.kv_cache_spec, in_flight, max_model_len),
                                tracer=tracer))
        for m in managers:
            m.retention_interval = retention_interval
            # (a sliding window keeps the tails EAGLE's replays resume at when any group drops)
            m.replay_eagle = bool(self.drop_eagle_group_ids)
        self.retention_interval = retention_interval
        self.single_type_managers: tuple[SingleTypeKVCacheManager, ...] = tuple(managers)
        # Managers whose remove_skipped_blocks can free anything (none: the call is skipped).
        self.skipping_managers = tuple(m for m in managers if m.skips_tokens)
        self._finish_init()

    def _finish_init(self) -> None:
        """A subclass's own set-up, once the shared fields exist (one constructor signature)."""

    def get_num_blocks_to_allocate(self, request_id: str, num_tokens: int,
                                   new_computed_blocks: tuple[Sequence[KVCacheBlock], ...],
                                   num_encoder_tokens: int = 0,
                                   total_computed_tokens: int = 0,
                                   num_local_computed_tokens: int = 0,
                                   num_tokens_main_model: int | None = None,
                                   apply_admission_cap: bool = False,
                                   prefill_end: int = 0) -> int:
        """``num_tokens_main_model``: the tokens without EAGLE's lookahead slots, for a group
        sized by those alone (`main_model_tokens`); None: ``num_tokens``."""
        total = 0
        main = num_tokens if num_tokens_main_model is None else num_tokens_main_model
        if self.retention_interval != 0:
            # (vLLM: under dense or segment retention every chunk's checkpoint is kept)
            prefill_end = 0
        for i, m in enumerate(self.single_type_managers):
            if m.uses_encoder_tokens:
                total += m.get_num_blocks_to_allocate(request_id, num_encoder_tokens, (), 0, 0,
                                                      apply_admission_cap)
            else:
                total += m.get_num_blocks_to_allocate(
                    request_id, main if m.main_model_tokens else num_tokens,
                    new_computed_blocks[i], total_computed_tokens,
                    num_local_computed_tokens, apply_admission_cap, prefill_end)
        return total

    def allocate_new_computed_blocks(self, request_id: str,
                                     new_computed_blocks: tuple[Sequence[KVCacheBlock], ...],
                                     num_local_computed_tokens: int,
                                     num_external_computed_tokens: int = 0) -> None:
        """Adopt a new request's hits in every group, then (two phases, so one group's
        allocation cannot evict another group's untouched hit) blocks for external tokens."""
        managers = self.single_type_managers
        if any(request_id in m.num_cached_block for m in managers):
            return      # a running request: no new hits
        for i, m in enumerate(managers):
            m.add_local_computed_blocks(request_id, new_computed_blocks[i],
                                        num_local_computed_tokens, num_external_computed_tokens)
        if num_external_computed_tokens > 0:
            for m in managers:
                m.allocate_external_computed_blocks(request_id, num_local_computed_tokens,
                                                    num_external_computed_tokens)

    def allocate_new_blocks(self, request_id: str, num_tokens: int,
                            num_tokens_main_model: int | None = None,
                            num_encoder_tokens: int = 0) -> tuple[list[KVCacheBlock], ...]:
        main = num_tokens if num_tokens_main_model is None else num_tokens_main_model
        return tuple(m.allocate_new_blocks(
            request_id, num_encoder_tokens if m.uses_encoder_tokens
            else main if m.main_model_tokens else num_tokens)
            for m in self.single_type_managers)

    def get_num_cacheable_tokens(self, num_computed_tokens: int) -> int:
        return num_computed_tokens

    def take_cow_blocks(self) -> list[KVCacheBlock]:
        """The step's copy-on-writes' held ends, group by group, for the scheduler to free once
        the step is planned (the retained blocks of vLLM's `take_kv_cache_block_copies`)."""
        out: list[KVCacheBlock] = []
        for m in self.single_type_managers:
            if m.pending_cow:
                out += m.take_cow_blocks()
        return out

    def cache_blocks(self, request: Request, num_computed_tokens: int) -> None:
        n = self.get_num_cacheable_tokens(num_computed_tokens)
        for m in self.single_type_managers:
            if m.enable_caching:
                m.cache_blocks(request, n)

    def free(self, request_id: str) -> None:
        for m in self.single_type_managers:
            m.free(request_id)

    def remove_skipped_blocks(self, request_id: str, processed_computed_tokens: int,
                              num_prompt_tokens: int | None = None) -> None:
        for m in self.skipping_managers:
            m.remove_skipped_blocks(request_id, processed_computed_tokens, num_prompt_tokens)

    def get_blocks(self, request_id: str) -> tuple[list[KVCacheBlock], ...]:
        return tuple(m.req_to_blocks.get(request_id) or [] for m in self.single_type_managers)

    def reset_prefix_cache(self) -> bool:
        return self.block_pool.reset_prefix_cache()

    def find_longest_cache_hit(self, block_hashes: list[bytes], max_cache_hit_length: int
                               ) -> tuple[tuple[list[KVCacheBlock], ...], int, int]:
        """Per-group hit blocks, the hit length, and the uncached common prefix (hybrid)."""
        raise NotImplementedError


class KVCacheCoordinatorNoPrefixCache(KVCacheCoordinator):
    """Prefix caching disabled: nothing is ever cached or hit."""

    def __init__(self, kv_cache_config, max_model_len: int, enable_kv_cache_events: bool,
                 scheduler_block_size: int, hash_block_size: int,
                 max_in_flight_tokens: int | None = None, use_eagle: bool = False,
                 tracer: BlockTracer | None = None,
                 retention_interval: int | None = None,
                 eagle_group_ids: Iterable[int] = ()) -> None:
        super().__init__(kv_cache_config, max_model_len, False, enable_kv_cache_events,
                         scheduler_block_size, hash_block_size, max_in_flight_tokens, use_eagle,
                         tracer, retention_interval, eagle_group_ids)

    def find_longest_cache_hit(self, block_hashes, max_cache_hit_length):
        return tuple([] for _ in self.single_type_managers), 0, 0


class UnitaryKVCacheCoordinator(KVCacheCoordinator):
    """One group: ask its manager."""

    def _finish_init(self) -> None:
        assert len(self.single_type_managers) == 1, "one KV cache group only"
        m = self.single_type_managers[0]
        assert not self.enable_caching or self.hash_block_size == m.block_size, \
            "a single group hashes at its own block size"
        self._drop = 0 in self.drop_eagle_group_ids
        m.use_eagle = self._drop
        self._manager = m
        self._lookup = type(m).find_longest_cache_hit
        self._group_ids = [0]

    def find_longest_cache_hit(self, block_hashes, max_cache_hit_length):
        m = self._manager
        blocks, n = self._lookup(block_hashes, max_cache_hit_length, self._group_ids,
                                 self.block_pool, m.kv_cache_spec, self._drop, m.block_size)
        return blocks, n, 0
