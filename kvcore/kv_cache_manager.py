"""`KVCacheManager`: the facade the scheduler talks to (vLLM's `kv_cache_manager.py`, 0.33).

The scheduler's protocol, per request:

    blocks, hit, _ = mgr.get_computed_blocks(req)             # pure lookup, no side effects
    new = mgr.allocate_slots(req, n, hit, blocks,              # None: does not fit, nothing
                             full_sequence_must_fit=True)      #   changed (but see below)
    mgr.record_prefix_cache_stats(req, hit)                    # on admission only (0.33)
    ... allocate_slots(req, k) for more prefill chunks / decode steps ...
    mgr.free(req)                                              # blocks go back tail first

`allocate_slots` frees out-of-window blocks before its fit check (even when it then refuses),
touches the hits, grows every group's table, and registers the blocks this step fills in the
prefix cache at once (at scheduling time, not after the forward pass). It returns only the new
blocks, never the hits.
"""

from __future__ import annotations

from collections.abc import Iterable
from math import gcd, lcm
from typing import TYPE_CHECKING, Any

from kvcore.coordinator_choice import get_kv_cache_coordinator
from kvcore.errors import sync_load_past_pool
from kvcore.kv_cache_blocks import KVCacheBlocks
from kvcore.kv_cache_config import KVCachePoolConfig
from kvcore.lookup_memo import lookup_memo
from kvcore.managers.mamba_partial import shared_prefix_checkpoint
from kvcore.plain_step import allocate_plain_step
from kvcore.prefix_cache_control import PrefixCacheControl
from kvcore.prefix_cache_stats import PrefixCacheStats
from kvcore.quiet_steps import windowable
from kvcore.request import Request, RequestStatus

if TYPE_CHECKING:
    from kvcore.block import KVCacheBlock
    from kvcore.tracing import BlockTracer

__all__ = ["KVCacheBlocks", "KVCacheManager", "KVCachePoolConfig", "PrefixCacheStats"]


class KVCacheManager(PrefixCacheControl):
    """The KV cache of one engine: pool, groups, prefix cache, events (the prefix cache's
    stats, events and control are its root's, `kvcore.prefix_cache_control`).

    ``KVCacheManager(kv_cache_config, max_model_len, *, num_blocks=None, hash_block_size=None,
    scheduler_block_size=None, max_in_flight_tokens=None, enable_caching=True,
    use_eagle=False, log_stats=True, enable_kv_cache_events=False, watermark=0.0,
    tracer=None, prefix_cache_retention_interval=None, eagle_group_ids=(),
    enable_mamba_shared_prefix_checkpoint=False)``

    * ``kv_cache_config``: anything with ``num_blocks`` and ``kv_cache_groups`` (a list of
      `KVCacheGroupSpec`), e.g. `KVCachePoolConfig`; or a plain list of `KVCacheGroupSpec` with
      ``num_blocks`` given separately.
    * ``hash_block_size``: granularity of ``request.block_hashes``; default the gcd of the
      groups' block sizes. ``scheduler_block_size``: default their lcm.
    * ``max_in_flight_tokens``: bounds sliding-window admission; default ``max_model_len``
      (what the oracle uses).
    * ``log_stats``: keep `PrefixCacheStats` (default True here; vLLM's default is False).
    * ``watermark``: keep ``int(watermark * num_blocks)`` blocks free when admitting a waiting
      or preempted request while others are scheduled (0.33's ``--kv-cache-watermark``).
    * ``tracer``: a `kvcore.tracing.BlockTracer`, or None (free).
    * ``use_eagle``: EAGLE's block drop (vLLM's `use_eagle_block_drop`, the legacy hash mode),
      in the groups ``eagle_group_ids`` names (those holding the draft's layers: vLLM's
      `is_eagle_group`), or in every group when it names none.
    * ``prefix_cache_retention_interval``: None (dense: every full block cached, the op-level
      oracle's) or vLLM's CacheConfig value (0, its default: a sliding-window group caches only
      the blocks a later hit can use; N: one window tail per N tokens).
    * ``enable_mamba_shared_prefix_checkpoint``: vLLM's opt-in Mamba state at a shared-prefix
      junction; on only where its predicate holds (``mamba_shared_prefix_checkpoint``,
      `kvcore.managers.mamba_partial.shared_prefix_checkpoint`).
    """

    memo_lookups = True     # a refused head's lookup kept (`kvcore.lookup_memo`); tests: off

    def __init__(self, kv_cache_config: Any, max_model_len: int, *, num_blocks: int | None = None,
                 hash_block_size: int | None = None, scheduler_block_size: int | None = None,
                 max_in_flight_tokens: int | None = None, enable_caching: bool = True,
                 use_eagle: bool = False, log_stats: bool = True,
                 enable_kv_cache_events: bool = False, watermark: float = 0.0,
                 tracer: BlockTracer | None = None,
                 prefix_cache_retention_interval: int | None = None,
                 eagle_group_ids: Iterable[int] = (),
                 enable_mamba_shared_prefix_checkpoint: bool = False) -> None:
        if isinstance(kv_cache_config, (list, tuple)):
            if num_blocks is None:
                raise ValueError("num_blocks is required when groups are given as a list")
            kv_cache_config = KVCachePoolConfig(num_blocks, list(kv_cache_config))
        groups = list(kv_cache_config.kv_cache_groups)
        sizes = [g.kv_cache_spec.block_size for g in groups] or [1]
        if hash_block_size is None:
            # (vLLM: the prefix-cacheable groups' gcd; a circular buffer's ring is left out)
            hash_block_size = gcd(*([g.kv_cache_spec.block_size for g in groups
                                     if g.kv_cache_spec.prefix_cacheable] or sizes))
        if scheduler_block_size is None:
            scheduler_block_size = lcm(*sizes)
        coordinator = get_kv_cache_coordinator(
            kv_cache_config, max_model_len, enable_caching, enable_kv_cache_events,
            scheduler_block_size, hash_block_size, max_in_flight_tokens=max_in_flight_tokens,
            use_eagle=use_eagle, tracer=tracer,
            retention_interval=prefix_cache_retention_interval, eagle_group_ids=eagle_group_ids)
        super().__init__(coordinator, groups, enable_caching, log_stats)
        self.kv_cache_config = kv_cache_config
        self.max_model_len = max_model_len
        self.enable_kv_cache_events = enable_kv_cache_events
        self.use_eagle = use_eagle
        self.hash_block_size = hash_block_size
        self.scheduler_block_size = scheduler_block_size
        self.num_kv_cache_groups = len(groups)
        assert watermark >= 0.0, "watermark must be non-negative"
        self.watermark_blocks = int(watermark * kv_cache_config.num_blocks)
        # One immutable empty answer, returned whenever there is nothing to return.
        self.empty_kv_cache_blocks = KVCacheBlocks(tuple(() for _ in groups))
        self.tracer = tracer
        # Every group plain (full-attention-like): allocation steps may take the short path.
        self.all_groups_plain = all(m.allocates_by_template
                                    for m in self.coordinator.single_type_managers) \
            and not self.coordinator.eagle_caching
        self.cacheable_alignment = self.coordinator.cacheable_alignment
        # Decode windows skip steps that touch no block (`kvcore.quiet_steps`); off recording.
        self.windowable = windowable(self.coordinator, hash_block_size)
        self.lookup_memo = lookup_memo(self.coordinator) if self.memo_lookups else None
        # (the scheduler reads it too: it stops a chunk only at a junction the managers key)
        self.mamba_shared_prefix_checkpoint = shared_prefix_checkpoint(
            self.coordinator, enable_mamba_shared_prefix_checkpoint)

    # --- state ------------------------------------------------------------------------
    @property
    def usage(self) -> float:
        """Fraction of usable blocks held by requests (cached free blocks count as free)."""
        return self.block_pool.get_usage()

    # --- lookup -----------------------------------------------------------------------
    def get_computed_blocks(self, request: Request, max_cache_hit_length: int | None = None
                            ) -> tuple[KVCacheBlocks, int, int]:
        """The longest cached prefix: ``(blocks per group, hit tokens, shared-prefix boundary)``.

        The hit is capped at ``num_tokens - 1``: the last token must be computed to produce
        logits, and hits are whole blocks, so a prompt of exactly k blocks hits at most k-1.
        A pure lookup: ref counts are taken by `allocate_slots`.
        """
        if not self.enable_caching or request.skip_reading_prefix_cache:
            return self.empty_kv_cache_blocks, 0, 0
        if max_cache_hit_length is None:
            max_cache_hit_length = request.num_tokens - 1
        memo = self.lookup_memo
        if memo is not None and memo.holds(request, max_cache_hit_length):
            return memo.answer      # type: ignore[return-value]  # (holds: set)
        blocks, n, uncached = self.coordinator.find_longest_cache_hit(request.block_hashes,
                                                                      max_cache_hit_length)
        boundary = n + uncached if uncached else 0
        answer = (KVCacheBlocks(blocks) if any(blocks) else self.empty_kv_cache_blocks, n,
                  boundary)
        if memo is not None:
            memo.note(request, max_cache_hit_length, answer, n + uncached)
        return answer

    # --- allocation -------------------------------------------------------------------
    def allocate_slots(self, request: Request, num_new_tokens: int,
                       num_new_computed_tokens: int = 0,
                       new_computed_blocks: KVCacheBlocks | None = None,
                       num_lookahead_tokens: int = 0, num_external_computed_tokens: int = 0,
                       delay_cache_blocks: bool = False, num_encoder_tokens: int = 0,
                       full_sequence_must_fit: bool = False, reserved_blocks: int = 0,
                       has_scheduled_reqs: bool = True) -> KVCacheBlocks | None:
        """Give ``request`` slots for ``num_new_tokens`` more tokens (plus lookahead slots).

        Layout: | computed | new hits | external | new | lookahead |. Returns the newly
        allocated blocks per group, or None when they do not fit (the hits are then untouched).
        ``full_sequence_must_fit`` first checks room for the whole sequence (vLLM's admission
        default ``scheduler_reserve_full_isl``).
        """
        if num_new_tokens == 0 and num_external_computed_tokens == 0 \
                and num_new_computed_tokens == 0:
            raise ValueError("num_new_tokens must be greater than 0 when there are no "
                             "computed tokens to adopt")
        if new_computed_blocks is None and self.all_groups_plain \
                and not (full_sequence_must_fit or num_new_computed_tokens
                         or num_external_computed_tokens or num_encoder_tokens
                         or reserved_blocks):
            return allocate_plain_step(self, request, num_new_tokens, num_lookahead_tokens,
                                       delay_cache_blocks, has_scheduled_reqs)
        coord = self.coordinator
        empty = self.empty_kv_cache_blocks.blocks
        hits = new_computed_blocks.blocks if new_computed_blocks is not None else empty
        num_local = request.num_computed_tokens + num_new_computed_tokens
        total_computed = min(num_local + num_external_computed_tokens, self.max_model_len)
        watermark = 0
        if has_scheduled_reqs and self.watermark_blocks and request.status in (
                RequestStatus.WAITING, RequestStatus.PREEMPTED):
            watermark = self.watermark_blocks
        free = self.block_pool.free_block_queue
        # (as the scheduler's Mamba split: resumed requests replay their outputs as prefill)
        prefill_end = max(request.num_prompt_tokens, request.num_tokens - 1)
        if full_sequence_must_fit:
            full = min(request.num_tokens, self.max_model_len)
            need = coord.get_num_blocks_to_allocate(request.request_id, full, hits,
                                                    num_encoder_tokens, total_computed,
                                                    num_local, full, True, prefill_end)
            if need + watermark > free.num_free_blocks:
                return None
        num_tokens_main = total_computed + num_new_tokens
        num_need_slot = min(num_tokens_main + num_lookahead_tokens, self.max_model_len)
        # Free what left the window first: fewer evictions, and it happens even on refusal.
        if coord.skipping_managers:
            coord.remove_skipped_blocks(
                request.request_id, max(0, total_computed - request.num_in_flight_tokens),
                request.num_prompt_tokens)
        if not (full_sequence_must_fit and self.all_groups_plain
                and num_need_slot == min(request.num_tokens, self.max_model_len)):
            # (With plain groups nothing changed since the full-sequence count above, so when
            # this step allocates the whole sequence that count is this one.)
            need = coord.get_num_blocks_to_allocate(request.request_id, num_need_slot, hits,
                                                    num_encoder_tokens,
                                                    num_local + num_external_computed_tokens,
                                                    num_local, num_tokens_main, False,
                                                    prefill_end)
        if need + watermark > free.num_free_blocks - reserved_blocks:
            return None
        if self.lookup_memo is not None and self.lookup_memo.req is request:
            self.lookup_memo.forget()   # admitted: its hits are adopted, its lookups over
        if hits is not empty or num_external_computed_tokens > 0:
            coord.allocate_new_computed_blocks(request.request_id, hits, num_local,
                                               num_external_computed_tokens)
        try:
            new_blocks = coord.allocate_new_blocks(request.request_id, num_need_slot,
                                                   num_tokens_main, num_encoder_tokens)
        except ValueError as err:   # (past the count above: a sync load's Mamba state block)
            raise (sync_load_past_pool(request.request_id, err)
                   if num_external_computed_tokens and num_new_tokens else err) from None
        if not delay_cache_blocks and self.enable_caching:
            # Cache up to the tokens this step computes, never unverified draft tokens.
            coord.cache_blocks(request, min(total_computed + num_new_tokens,
                                            request.num_tokens))
        for g in new_blocks:
            if g:
                return KVCacheBlocks(new_blocks)
        return self.empty_kv_cache_blocks

    def free(self, request: Request) -> None:
        """Release every block of the request, tail first in each group."""
        self.coordinator.free(request.request_id)

    def pop_blocks_for_free(self, request: Request) -> list[list[KVCacheBlock]]:
        """Its tables dropped, not released (`kvcore.engine.deferred_frees.release` frees them)."""
        return [m.pop_blocks_for_free(request.request_id)
                for m in self.coordinator.single_type_managers]

    def remove_skipped_blocks(self, request_id: str, processed_computed_tokens: int,
                              num_prompt_tokens: int | None = None) -> None:
        """(``num_prompt_tokens``: the prompt an R-SWA group keeps; vLLM's callers pass it.)"""
        self.coordinator.remove_skipped_blocks(request_id, processed_computed_tokens,
                                               num_prompt_tokens)

    def cache_blocks(self, request: Request, num_computed_tokens: int) -> None:
        """Register full blocks up to ``num_computed_tokens`` (after a delayed/async load)."""
        if self.enable_caching:
            self.coordinator.cache_blocks(request, num_computed_tokens)

    def new_step_starts(self) -> None:
        """A schedule() begins (vLLM's hook: Mamba forgets the states cached in the last one)."""
        for m in self.coordinator.single_type_managers:
            m.new_step_starts()

    # --- views ------------------------------------------------------------------------
    def get_num_common_prefix_blocks(self, running_request_id: str) -> list[int]:
        """0.33 removed cascade attention: always zeros, one per group."""
        return [0] * self.num_kv_cache_groups

    def get_blocks(self, request_id: str) -> KVCacheBlocks:
        blocks = self.coordinator.get_blocks(request_id)
        return KVCacheBlocks(blocks) if any(blocks) else self.empty_kv_cache_blocks

    def get_block_ids(self, request_id: str) -> tuple[list[int], ...]:
        return tuple([b.block_id for b in g] for g in self.coordinator.get_blocks(request_id))

    def get_num_free_blocks(self) -> int:
        return self.block_pool.get_num_free_blocks()
