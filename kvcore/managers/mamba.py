"""Mamba (and other recurrent) layers: one fixed-size state per request, not one entry per token.

A block holds the state after the tokens up to its end. Only the latest state is needed to go
on, so (vLLM 0.33's ``align`` mode, the cache mode vLLM runs a hybrid Mamba model in whenever
prefix caching is on):

* lookup: scan right to left for the LATEST cached state (not a prefix run): the result is
  ``[null] * i + [hit]`` so its length times the block size is the hit length; a state that
  does not end on the scheduler's alignment is passed over;
* a hit on a state cached in the current ``schedule()`` is refused (more blocks than the pool
  holds) until the next one: the worker has not written it yet (``new_step_starts`` forgets);
* skipped tokens are ``n - 1``: once ``n`` tokens are computed only the block holding the last
  one matters, so every older state is freed, later first, null entries passed over;
* an allocation pads the table with nulls up to the block that will hold the new running state
  and takes at most ``1 + num_speculative_blocks`` fresh blocks; the previous state stays until
  the next step's skip, so a request holds at most two states (three with a Mamba2 checkpoint
  below; vLLM sizes it the same way: ``page * (2 + speculative + checkpoint blocks)``);
* only a state that ends exactly on its block's end is cached, and at
  ``prefix_cache_retention_interval`` 0 (vLLM's default) only one a later hit can start from
  (the replay boundary ``num_prompt_tokens - 1`` floored, the shared-prefix junction).

Mamba2 layers (vLLM's ``MambaMixer2``) also write a prefill checkpoint from inside a chunk,
in a block of its own just before the running state's: `kvcore.managers.mamba_checkpoint`.

The scheduler's half is `kvcore.engine.mamba_split`: prefill chunks end on block boundaries, so
the states above land where a hit can use them. Checked step for step and event for event
against the real vLLM 0.33 Scheduler and AsyncScheduler (tests/data/sched_mamba/: Jamba's
layout and the same with Mamba2 groups, every group at one block size, no speculative decoding,
sync and async, FCFS and priority, preemption, retention 0, dense and 2 or 4 blocks, 200 random
Mamba2 runs).

With a hash block finer than the Mamba block (``--prefix-match-unit``, partial hash hits) the
lookup runs at hash granularity (`kvcore.managers.fine_lookup`), a hit or the producer's own
tail inside a block is copied (a block more), and caching keys states inside blocks: the
subclass `kvcore.managers.mamba_partial.FineMambaManager` (also checked against vLLM:
tests/data/sched_mamba/p16_*, p8_*).

With a CPU tier the states cached each schedule() are handed to it (``state_offers``), and a
sync load's state block is cached when the caching passes it (``_loaded``): checked against
vLLM (tests/data/offload_mamba/); the opt-in shared-prefix states with the tier too
(``enable_mamba_shared_prefix_checkpoint``: offload_junction/; sched_spec_junction/ without).

Speculative decoding (vLLM keeps ``num_speculative_blocks`` = K state blocks a request beyond
the running one, whatever the method): an allocated request's speculative blocks that a
multi-block step leaves behind move to the table's end (vLLM's relocation), EAGLE's lookahead
slots take no block here (``main_model_tokens``), and with EAGLE's legacy block drop the
checkpoints move a block lower (`kvcore.managers.mamba_checkpoint`). Checked step for step
against vLLM with ngram, eagle3 and mtp, sync and async, align and "none" mode
(tests/data/sched_spec_mamba/).
"""


from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.hashing import resolve_block_hashes
from kvcore.managers.base import SingleTypeKVCacheManager
from kvcore.managers.fine_lookup import mamba_hit
from kvcore.managers.mamba_caching import cache_states
from kvcore.managers.mamba_checkpoint import checkpoint_block
from kvcore.managers.mamba_retention import retained_states
from kvcore.request import Request
from kvcore.specs import MambaSpec, cdiv

if TYPE_CHECKING:
    from kvcore.block import KVCacheBlock


class MambaManager(SingleTypeKVCacheManager):
    skips_tokens = True

    def _finish_init(self) -> None:
        spec = self.kv_cache_spec
        assert isinstance(spec, MambaSpec)
        self.num_speculative_blocks = spec.num_speculative_blocks
        # align mode: EAGLE's lookahead slots take no block here (vLLM: they would break the
        # alignment, and its drafts have no Mamba layer)
        self.main_model_tokens = self.enable_caching
        self._allocated: set[str] = set()
        # Table entries below this index were walked by a skip already (vLLM's retired count).
        self._retired: dict[str, int] = {}
        # The hashes of the states this group cached in the current schedule() (vLLM's
        # cached_blocks_this_step): the worker writes them only when that batch runs.
        self._cached_this_step: set[bytes] = set()
        # Mamba2: a prefill checkpoint written from inside a chunk (align mode only).
        self.checkpoint_align = (spec.prefill_checkpoint_alignment or 1
                                 if spec.num_prefill_checkpoint_blocks > 0
                                 and self.enable_caching else 0)
        # request -> (checkpoint position, table index of the block reserved for it) for the
        # allocation being made (vLLM's _checkpoints).
        self._checkpoints: dict[str, tuple[int, int]] = {}
        # The CPU tier's hand-off of the states cached this schedule() (None: no tier).
        self.state_offers: list[tuple[str, KVCacheBlock, int]] | None = None
        # request -> table index of the state a connector loads (it ends its block): a sync
        # load's caching runs past it, and vLLM caches (and offers) it under the retention mask.
        self._loaded: dict[str, int] = {}

    @classmethod
    def find_longest_cache_hit(cls, block_hashes, max_length, kv_cache_group_ids, block_pool,
                               kv_cache_spec, drop_eagle_block=False, alignment_tokens=None):
        bs = kv_cache_spec.block_size
        if alignment_tokens is None:
            alignment_tokens = bs
        elif alignment_tokens < bs:
            return mamba_hit(block_hashes, max_length, kv_cache_group_ids, block_pool, bs,
                             alignment_tokens)
        hashes = resolve_block_hashes(block_hashes, block_pool.hash_block_size, bs)
        null = block_pool.null_block
        for i in range(min(max_length // bs, len(hashes)) - 1, -1, -1):
            cached = block_pool.get_cached_block(hashes[i], kv_cache_group_ids)
            if cached is None:
                continue
            if bs != alignment_tokens and (i + 1) * bs % alignment_tokens != 0:
                continue
            return tuple([null] * i + [blk] for blk in cached), (i + 1) * bs
        return tuple([] for _ in kv_cache_group_ids), 0

    def get_num_skipped_tokens(self, num_computed_tokens: int) -> int:
        return num_computed_tokens - 1

    def tokens_to_skip_block(self, block_index: int) -> int:
        """The state in block ``block_index`` is passed once a token past the block's end is
        computed (skipped ``n - 1``)."""
        return (block_index + 1) * self.block_size + 1

    def remove_skipped_blocks(self, request_id: str, processed_computed_tokens: int,
                              num_prompt_tokens: int | None = None) -> None:
        """Free every state before the running one, the later first (vLLM 0.33's align mode).

        Unlike attention's walk this one passes over null entries: an aligned prefill leaves
        nulls between the states it kept (a junction's, the last chunk's), and each of those
        states is freed once the request computes past it.
        """
        skipped_tokens = self.get_num_skipped_tokens(processed_computed_tokens)
        if skipped_tokens <= 0:
            return
        blocks = self.req_to_blocks.setdefault(request_id, [])
        first = self._retired.get(request_id, 0)
        k = min(skipped_tokens // self.block_size, len(blocks))
        if first >= k:
            return
        null = self._null_block
        removed = []
        for i in range(k - 1, first - 1, -1):
            blk = blocks[i]
            if blk is not null:
                removed.append(blk)
                blocks[i] = null
        if removed:
            self._release(removed)
        self._retired[request_id] = k

    def _physical_cap(self, request_id: str) -> int:
        return 1 + (0 if request_id in self._allocated else self.num_speculative_blocks)

    def get_num_blocks_to_allocate(self, request_id, num_tokens, new_computed_blocks,
                                   total_computed_tokens=0, num_local_computed_tokens=0,
                                   apply_admission_cap=False, prefill_end=0):
        if new_computed_blocks and new_computed_blocks[-1].block_hash in self._cached_this_step:
            # A state another request caches in this very step is not written yet: vLLM
            # answers "more than the pool holds", so the request waits for the next step.
            return self.block_pool.num_gpu_blocks + 1
        required = cdiv(num_tokens, self.block_size) + self.num_speculative_blocks
        held = len(self.req_to_blocks.get(request_id, ()))
        new = required - len(new_computed_blocks) - held
        # The chunk's checkpoint (the last aligned position before its end) takes a block of
        # its own when the chunk writes it from inside; decided here, as vLLM does, and kept
        # for the allocation and the caching that follow (not by the full-sequence check).
        # Mamba1 (no checkpoint block) skips all of it: this runs per group per allocation.
        ckpt = checkpoint_block(self, request_id, num_tokens, total_computed_tokens,
                                prefill_end, apply_admission_cap) if self.checkpoint_align else 0
        if new > 0:
            new = min(new, self._physical_cap(request_id) + ckpt)
        new = max(new, 0)
        evictable = sum(1 for b in new_computed_blocks if b.ref_cnt == 0 and not b.is_null)
        return new + evictable

    def allocate_external_computed_blocks(self, request_id: str, num_local_computed_tokens: int,
                                          num_external_computed_tokens: int) -> None:
        super().allocate_external_computed_blocks(request_id, num_local_computed_tokens,
                                                  num_external_computed_tokens)
        total = num_local_computed_tokens + num_external_computed_tokens
        if total % self.block_size == 0:
            self._loaded[request_id] = total // self.block_size - 1

    def allocate_new_blocks(self, request_id, num_tokens):
        blocks = self.req_to_blocks.setdefault(request_id, [])
        required = cdiv(num_tokens, self.block_size) + self.num_speculative_blocks
        ckpt = 1 if request_id in self._checkpoints else 0
        if required <= len(blocks) and not ckpt:
            self._allocated.add(request_id)
            return []
        self._clear_to_state(request_id, blocks, required, ckpt)
        n = min(max(required - len(blocks), 0), self._physical_cap(request_id) + ckpt)
        new = self.block_pool.get_new_blocks(n) if n > 0 else []
        blocks.extend(new)
        self._allocated.add(request_id)
        if new and self.tracer is not None:
            self.tracer.on_allocate(self.kv_cache_group_id, [b.id_obj for b in new])
        return new

    def _clear_to_state(self, request_id: str, blocks: list[KVCacheBlock], required: int,
                        ckpt: int) -> None:
        """The table before a step's fresh blocks (``required`` in all, ``ckpt`` 1 with a
        checkpoint block): positions before the new running state hold no state of this
        request, nulls but for the checkpoint's block just before it; an allocated request's
        speculative blocks this step leaves behind move to the table's end, nulls in their
        place (vLLM's _relocate_speculative_block): reused, not taken afresh; one at the
        checkpoint's index stays for it."""
        k = self.num_speculative_blocks
        state_index = required - k - 1
        held = len(blocks)
        if held < state_index:
            blocks.extend([self._null_block] * (state_index - ckpt - held))
        if k and request_id in self._allocated:
            for i in range(held - k, min(held, state_index - ckpt)):
                blocks.append(blocks[i])
                blocks[i] = self._null_block

    def cache_blocks(self, request, num_tokens: int) -> None:
        """Register only the states a later hit can start from
        (`kvcore.managers.mamba_caching`)."""
        cache_states(self, request, num_tokens)

    def _template_cache_blocks(self, request: Request, num_tokens: int) -> None:
        """vLLM's template caching (every non-null block the retention mask keeps), for
        `kvcore.managers.mamba_partial`."""
        super().cache_blocks(request, num_tokens)

    def new_step_starts(self) -> None:
        self._cached_this_step.clear()

    def reachable_block_mask(self, start_block: int, end_block: int,
                             request: Request | None = None) -> list[bool] | None:
        return retained_states(self, start_block, end_block, request)

    def pop_blocks_for_free(self, request_id: str) -> list[KVCacheBlock]:
        if self.state_offers:   # (its blocks go back to the pool: its offers would be stale)
            self.state_offers[:] = [o for o in self.state_offers if o[0] != request_id]
        return super().pop_blocks_for_free(request_id)

    def free(self, request_id: str) -> None:
        self._allocated.discard(request_id)
        self._checkpoints.pop(request_id, None)
        self._retired.pop(request_id, None)
        self._loaded.pop(request_id, None)
        super().free(request_id)
