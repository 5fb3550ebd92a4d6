"""`SingleTypeKVCacheManager`: the block tables of one KV cache group.

vLLM's `single_type_kv_cache_manager.py` (0.33), the template every attention type fills in.
One instance per group; all groups share the coordinator's `BlockPool`. The tables themselves
and their release (the whole table at the end, the blocks attention no longer reads during the
request) are its root class, `kvcore.managers.tables.BlockTables`; here, how a request's table
is sized, adopts a prefix hit, grows and is cached.

A subclass decides three things: how to find the longest cached prefix
(`find_longest_cache_hit`), how many leading tokens attention no longer reads
(`get_num_skipped_tokens` with its inverse `tokens_to_skip_block`, in `tables.py`; their blocks
are freed early and nulled), and which full blocks are worth caching (`reachable_block_mask`).

Partial-block hits (`--prefix-match-unit`) are full attention's and Mamba's own
(`fine_full_attention`, `mamba_partial`). Not modelled (outside kvcli's scope): KV connectors'
external blocks beyond a plain allocation, zeroing lists.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from kvcore.block import KVCacheBlock
from kvcore.managers.tables import BlockTables
from kvcore.specs import KVCacheSpec, cdiv

if TYPE_CHECKING:
    from kvcore.block_pool import BlockPool
    from kvcore.request import Request
    from kvcore.tracing import BlockTracer

# The steps `kvcore.plain_step` inlines for a group that keeps them as written here.
_TEMPLATE_STEPS = ("get_num_blocks_to_allocate", "allocate_new_blocks", "cache_blocks",
                   "get_num_skipped_tokens", "remove_skipped_blocks")


class SingleTypeKVCacheManager(BlockTables):
    # Whether this group takes part in prefix caching at all (cross-attention does not).
    prefix_cacheable: ClassVar[bool] = True
    # Whether the coordinator sizes this group by encoder tokens (cross-attention).
    uses_encoder_tokens: ClassVar[bool] = False

    def __init__(self, kv_cache_spec: KVCacheSpec, block_pool: BlockPool, enable_caching: bool,
                 kv_cache_group_id: int, scheduler_block_size: int | None = None,
                 max_admission_blocks_per_request: int | None = None,
                 tracer: BlockTracer | None = None) -> None:
        super().__init__(block_pool, kv_cache_spec.block_size, kv_cache_group_id, tracer)
        self.kv_cache_spec = kv_cache_spec
        self.enable_caching = enable_caching
        self.scheduler_block_size = scheduler_block_size or self.block_size
        # Hits must end on a multiple of this (the scheduler block size: the lcm of groups).
        self.cache_hit_alignment_tokens = self.scheduler_block_size
        self.max_admission_blocks_per_request = max_admission_blocks_per_request
        # EAGLE's block drop in this group (vLLM's manager `use_eagle`); and whether any group
        # of the stack drops (the replay boundaries a sliding window keeps tails at)
        self.use_eagle = False
        self.replay_eagle = False
        # Whether the coordinator sizes this group by the target's tokens alone, without
        # EAGLE's lookahead slots (vLLM's num_tokens_main_model: an align-mode Mamba group)
        self.main_model_tokens = False
        # vLLM's prefix_cache_retention_interval (only sliding windows act on it): None caches
        # every full block (dense), 0 only the tails a later hit can use, N one tail per N tokens.
        self.retention_interval: int | None = None
        self._finish_init()

    def _finish_init(self) -> None:
        """A kind's own fields from its spec, once the shared ones exist (one constructor
        signature for all kinds: the compiled build takes no `*args` forwarding)."""

    @classmethod
    def admission_cap(cls, spec: KVCacheSpec, max_in_flight_tokens: int,
                      max_model_len: int) -> int | None:
        """Most blocks one request can hold at once (None: no cap). Groups that recycle blocks
        (sliding window, chunked local) cap the full-sequence admission check with it."""
        return None

    @property
    def allocates_by_template(self) -> bool:
        """Whether this group allocates exactly as the template: it never frees tokens early,
        is not sized by encoder tokens, has no admission cap and overrides none of the sizing,
        allocation or caching steps (so `kvcore.plain_step` may inline them)."""
        cls = type(self)
        return (not self.skips_tokens and not self.uses_encoder_tokens and self.prefix_cacheable
                and self.max_admission_blocks_per_request is None
                and all(getattr(cls, name) is getattr(SingleTypeKVCacheManager, name)
                        for name in _TEMPLATE_STEPS))

    # --- sizing -----------------------------------------------------------------------
    def get_num_blocks_to_allocate(self, request_id: str, num_tokens: int,
                                   new_computed_blocks: Sequence[KVCacheBlock],
                                   total_computed_tokens: int = 0,
                                   num_local_computed_tokens: int = 0,
                                   apply_admission_cap: bool = False,
                                   prefill_end: int = 0) -> int:
        """Blocks this group must take from the free queue to hold ``num_tokens`` slots.
        (``prefill_end``: where the request's prefill ends; only Mamba2's checkpoints read it.)

        Hits that sit in the free queue (ref 0) leave it when touched, so they count too.
        """
        required = cdiv(num_tokens, self.block_size)
        if apply_admission_cap and self.max_admission_blocks_per_request is not None:
            # Sliding-window-like groups recycle blocks: a request never holds more than this.
            required = min(required, self.max_admission_blocks_per_request)
        held = len(self.req_to_blocks.get(request_id, ()))
        if request_id in self.num_cached_block:
            # A running request gets no new hits.
            return max(required - held, 0)
        skipped_blocks = self.get_num_skipped_tokens(total_computed_tokens) // self.block_size
        new_blocks = max(required - max(skipped_blocks, len(new_computed_blocks) + held), 0)
        # Hits below the window are never touched (they become null), so they cost nothing.
        skip_hits = max(0, skipped_blocks - held)
        evictable = 0
        for blk in new_computed_blocks[skip_hits:] if skip_hits else new_computed_blocks:
            if blk.ref_cnt == 0 and not blk.is_null:
                evictable += 1
        return new_blocks + evictable

    # --- hits -------------------------------------------------------------------------
    def add_local_computed_blocks(self, request_id: str,
                                  new_computed_blocks: Sequence[KVCacheBlock],
                                  num_local_computed_tokens: int,
                                  num_external_computed_tokens: int = 0) -> None:
        """Adopt a new request's prefix hit: touch the blocks and start its table with them.

        Hits below the attention window become null entries instead of being touched. A hit
        ending inside its last block (partial hash hits) is cached only up to that block.
        """
        req_blocks = self.req_to_blocks.setdefault(request_id, [])
        assert not req_blocks, "hits are only added to a request with no blocks yet"
        skipped = self.get_num_skipped_tokens(
            num_local_computed_tokens + num_external_computed_tokens) // self.block_size
        if skipped > 0:
            new_computed_blocks = new_computed_blocks[skipped:]
        if self.enable_caching:
            self.block_pool.touch(new_computed_blocks)
            if self.tracer is not None:
                real = [b for b in new_computed_blocks if not b.is_null]
                if real:
                    # Hits are cached blocks, so every one has a hash.
                    hashes: list[bytes] = [b.block_hash for b in real]  # type: ignore[misc]
                    self.tracer.on_touch(self.kv_cache_group_id, [b.id_obj for b in real],
                                         hashes)
        else:
            assert not any(new_computed_blocks), "no hits without prefix caching"
        if skipped > 0:
            req_blocks.extend([self._null_block] * skipped)
        req_blocks.extend(new_computed_blocks)
        # Every adopted entry (nulls included) is already cached.
        self.num_cached_block[request_id] = len(req_blocks)
        if new_computed_blocks and num_local_computed_tokens % self.block_size:
            index = num_local_computed_tokens // self.block_size
            self.partial_hits[request_id] = (index, new_computed_blocks[-1])
            self.num_cached_block[request_id] = index

    def allocate_external_computed_blocks(self, request_id: str, num_local_computed_tokens: int,
                                          num_external_computed_tokens: int) -> None:
        """Fresh blocks for tokens a KV connector supplies (inside the window only)."""
        total = num_local_computed_tokens + num_external_computed_tokens
        req_blocks = self.req_to_blocks.setdefault(request_id, [])
        skipped = self.get_num_skipped_tokens(total) // self.block_size
        if skipped > len(req_blocks):
            req_blocks.extend([self._null_block] * (skipped - len(req_blocks)))
        n = cdiv(total, self.block_size) - len(req_blocks)
        if n > 0:
            new = self.block_pool.get_new_blocks(n)
            req_blocks.extend(new)
            if self.tracer is not None:
                self.tracer.on_allocate(self.kv_cache_group_id, [b.id_obj for b in new])

    # --- allocation -------------------------------------------------------------------
    def allocate_new_blocks(self, request_id: str, num_tokens: int) -> list[KVCacheBlock]:
        """Grow the table to hold ``num_tokens`` slots; return only the new blocks."""
        req_blocks = self.req_to_blocks.get(request_id)
        if req_blocks is None:
            req_blocks = self.req_to_blocks[request_id] = []
        n = -(-num_tokens // self.block_size) - len(req_blocks)
        if n <= 0:
            return []
        new = self.block_pool.get_new_blocks(n)
        req_blocks.extend(new)
        if self.tracer is not None:
            self.tracer.on_allocate(self.kv_cache_group_id, [b.id_obj for b in new])
        return new

    def cache_blocks(self, request: Request, num_tokens: int) -> None:
        """Register every block that ``num_tokens`` fills (and the request has hashes for)."""
        if not self.prefix_cacheable:
            return
        rid = request.request_id
        num_cached = self.num_cached_block.get(rid, 0)
        num_full = min(num_tokens, len(request.block_hashes) * self.block_pool.hash_block_size
                       ) // self.block_size
        if num_cached >= num_full:
            return
        mask = self.reachable_block_mask(num_cached, num_full, request)
        self.block_pool.cache_full_blocks(request, self.req_to_blocks[rid], num_cached,
                                          num_full, self.block_size, self.kv_cache_group_id,
                                          mask)
        self.num_cached_block[rid] = num_full

    def reachable_block_mask(self, start_block: int, end_block: int,
                             request: Request | None = None) -> list[bool] | None:
        """Which of the blocks ``[start, end)`` could ever serve a hit (None: all of them)."""
        return None

    def new_step_starts(self) -> None:
        """A schedule() begins (only Mamba acts on it)."""

    def get_num_common_prefix_blocks(self, request_id: str) -> int:
        return 0

    # --- lookup -----------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def find_longest_cache_hit(cls, block_hashes, max_length: int,
                               kv_cache_group_ids: Sequence[int], block_pool: BlockPool,
                               kv_cache_spec: KVCacheSpec, drop_eagle_block: bool = False,
                               alignment_tokens: int | None = None
                               ) -> tuple[tuple[list[KVCacheBlock], ...], int]:
        """The longest cached prefix of at most ``max_length`` tokens that every group in
        ``kv_cache_group_ids`` holds: one block list per group (null blocks where the group
        needs nothing) and the hit length in tokens, a multiple of ``alignment_tokens``."""
