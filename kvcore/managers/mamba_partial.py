"""A Mamba group's part in partial hash hits (vLLM 0.33, `--prefix-match-unit` finer than the
Mamba block, the coordinator's `enable_partial_hash_hits`).

A Mamba block holds one state, the request's state at some position inside or at the end of
the block. With hits at every hash boundary (`kvcore.managers.fine_lookup.mamba_hit`):

* the producer: when a prefill chunk ends on the prompt's last hash boundary (``num_prompt -
  1`` floored to the hash block, where the scheduler stops it: `kvcore.engine.mamba_split`),
  `_cache_partial_tail` keys the running state's block there (`BlockPool.cache_partial_block`,
  `kvcore.partial_hashes`). Inside a block the request will go on writing that state, so its
  next allocation copies it out first (`copy_on_write`, a running request: the keys move to the
  copy, `move_block_hashes`, the table stays; the copy counts as cached in this step);
* a hit inside a block: the new request's table gets a private copy of the hit block in its
  place (`_apply_cow`), its cached count stopping before it;
* a Mamba2 checkpoint written from inside a chunk sits on the hash grid: its block is re-keyed
  there (``replace_existing_hashes``), or, when no later hit can reach it (not the prompt's,
  not retained, not the junction), evicted;
* caching is vLLM's template (every non-null block the retention mask keeps), and no
  rounding of the cacheable prefix (`HybridKVCacheCoordinator._align_cacheable`);
* vLLM's opt-in ``enable_mamba_shared_prefix_checkpoint`` (`shared_prefix_checkpoint`): a
  prompt chunk ending at the shared-prefix junction the lookup reported (where the scheduler
  then stops it) keys its state there too, as the prompt's tail
  (tests/data/sched_spec_junction/DESIGN.md).

Both ends of a copy are held until the scheduler frees them at the end of the step
(`SingleTypeKVCacheManager.take_cow_blocks`, vLLM's `Scheduler._free_cow_retained_blocks`).

A subclass (the coordinator picks it for a Mamba group coarser than the hash block) so that
Mamba without a unit runs `MambaManager`'s steps with no check of any of this.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kvcore.block import KVCacheBlock
from kvcore.managers.mamba import MambaManager
from kvcore.managers.mamba_checkpoint import (
    checkpoint_block,
    checkpoint_kept,
    checkpoint_position,
)
from kvcore.request import Request
from kvcore.specs import cdiv

if TYPE_CHECKING:
    from kvcore.coordinator import KVCacheCoordinator
    from kvcore.partial_hashes import PartialHashes


def shared_prefix_checkpoint(coordinator: KVCacheCoordinator, enabled: bool) -> bool:
    """vLLM's `KVCacheManager.mamba_shared_prefix_checkpoint` (kv_cache_manager.py:188-197):
    the option, a group flagged as EAGLE's, partial hash hits and no re-prefilled tail (always
    none here: multi-module MTP is refused); where it holds, every Mamba manager keys junction
    states. False: the option changes nothing."""
    on = enabled and bool(coordinator.eagle_group_ids) and coordinator.partial_hits
    for m in coordinator.single_type_managers:
        if isinstance(m, FineMambaManager):     # (with partial hits, every Mamba group's)
            m.shared_prefix_checkpoint = on
    return on


class FineMambaManager(MambaManager):
    def _finish_init(self) -> None:
        super()._finish_init()
        # request -> the boundary of the tail it produced in its running block, until the
        # copy-on-write saves it (vLLM's _producer_partial_tail_reqs): with a CPU tier the copy
        # is handed to it (``state_offers``)
        self.producer_tails: dict[str, int] = {}
        self.shared_prefix_checkpoint = False   # (set by `shared_prefix_checkpoint`)

    def get_num_blocks_to_allocate(self, request_id: str, num_tokens: int,
                                   new_computed_blocks: Sequence[KVCacheBlock],
                                   total_computed_tokens: int = 0,
                                   num_local_computed_tokens: int = 0,
                                   apply_admission_cap: bool = False,
                                   prefill_end: int = 0) -> int:
        """`MambaManager`'s count, plus the copy of a state inside a block (a hit's, or the
        request's own tail), which also raises the cap on fresh blocks by one."""
        if new_computed_blocks and new_computed_blocks[-1].block_hash in self._cached_this_step:
            return self.block_pool.num_gpu_blocks + 1   # (as MambaManager)
        required = cdiv(num_tokens, self.block_size) + self.num_speculative_blocks
        held = len(self.req_to_blocks.get(request_id, ()))
        new = required - len(new_computed_blocks) - held
        partial = 0
        if new_computed_blocks and num_local_computed_tokens % self.block_size \
                or request_id in self.partial_hits:
            partial = 1
            new = max(new, 0) + 1
        ckpt = checkpoint_block(self, request_id, num_tokens, total_computed_tokens,
                                prefill_end, apply_admission_cap) if self.checkpoint_align else 0
        if new > 0:
            new = min(new, self._physical_cap(request_id) + partial + ckpt)
        new = max(new, 0)
        evictable = sum(1 for b in new_computed_blocks if b.ref_cnt == 0 and not b.is_null)
        return new + evictable

    def allocate_new_blocks(self, request_id: str, num_tokens: int) -> list[KVCacheBlock]:
        """`MambaManager`'s allocation, the first fresh block taken as the copy
        (`copy_on_write`) when a state inside a block is to be copied."""
        blocks = self.req_to_blocks.setdefault(request_id, [])
        required = cdiv(num_tokens, self.block_size) + self.num_speculative_blocks
        ckpt = 1 if request_id in self._checkpoints else 0
        hit = self.partial_hits.pop(request_id, None)
        if required <= len(blocks) and not ckpt and hit is None:
            self._allocated.add(request_id)
            return []
        self._clear_to_state(request_id, blocks, required, ckpt)
        extra = 0 if hit is None else 1
        n = min(max(required - len(blocks), 0) + extra,
                self._physical_cap(request_id) + ckpt + extra)
        new = self.block_pool.get_new_blocks(n) if n > 0 else []
        if new and self.tracer is not None:
            self.tracer.on_allocate(self.kv_cache_group_id, [b.id_obj for b in new])
        if hit is not None:
            self.copy_on_write(request_id, hit, new[0])
            new = new[1:]
        blocks.extend(new)
        self._allocated.add(request_id)
        return new

    def copy_on_write(self, request_id: str, hit: tuple[int, KVCacheBlock],
                      copy: KVCacheBlock) -> None:
        """vLLM's copy of a state inside a block: a running request (its own tail) stays on
        the source and the cache's keys move to the copy (`move_block_hashes`); a new one (a
        hit) has the copy put in its table in the hit block's place (`_apply_cow`)."""
        index, source = hit
        blocks = self.req_to_blocks[request_id]
        assert blocks[index] is source
        if request_id in self._allocated:
            self._keys().move(source, copy)
            source.ref_cnt += 1
            boundary = self.producer_tails.pop(request_id, None)
            if boundary is not None and self.state_offers is not None:
                # the producer's tail state, kept in the copy: the CPU tier's partial tail
                self.state_offers.append((request_id, copy, boundary))
            if copy.block_hash is not None:
                # filled by this step's copy only: no hit on it before the next step
                self._cached_this_step.add(copy.block_hash)
        else:
            blocks[index] = copy
            copy.ref_cnt += 1
        self.pending_cow.append((source, copy))

    def _keys(self) -> PartialHashes:
        partial = self.block_pool.partial
        assert partial is not None
        return partial

    def cache_blocks(self, request: Request, num_tokens: int) -> None:
        """vLLM's `MambaManager.cache_blocks` in align mode: the template's caching, the key
        inside a block (`_cache_partial_tail`), and every state keyed here noted as cached in
        this step (no hit on it before the next one)."""
        rid = request.request_id
        before = self.num_cached_block.get(rid, 0)
        self._template_cache_blocks(request, num_tokens)
        after = self.num_cached_block.get(rid, 0)
        h = self._cache_partial_tail(request, num_tokens)
        if h is not None:
            self._cached_this_step.add(h)
        if after > before:
            blocks = self.req_to_blocks[rid]
            offers = self.state_offers
            bs = self.block_size
            for i in range(before, after):
                bh = blocks[i].block_hash
                if bh is not None and not blocks[i].is_null:
                    self._cached_this_step.add(bh)
                    if offers is not None:
                        # (a CPU tier gets every state cached, at its key's position)
                        offers.append((rid, blocks[i], self._keys().num_tokens(blocks[i],
                                                                               (i + 1) * bs)))

    def pop_blocks_for_free(self, request_id: str) -> list[KVCacheBlock]:
        self.producer_tails.pop(request_id, None)
        return super().pop_blocks_for_free(request_id)

    def _at_junction(self, request: Request, num_tokens: int) -> bool:
        """Whether a chunk ending at ``num_tokens`` ends at the junction a sibling resumes at,
        inside the prompt chunk being computed (during decode the running block changes in
        place: its key would promise a state not yet written). vLLM:
        single_type_kv_cache_manager.py:2092-2104."""
        return (self.shared_prefix_checkpoint
                and num_tokens == request.shared_prefix_boundary
                and request.num_computed_tokens < num_tokens <= request.num_prompt_tokens)

    def _cache_partial_tail(self, request: Request, num_tokens: int) -> bytes | None:
        """vLLM's `MambaManager._cache_partial_tail_block`: the key it added, or None."""
        bs = self.block_size
        keys = self._keys()
        rid = request.request_id
        blocks = self.req_to_blocks.get(rid, [])
        checkpoint = self._checkpoints.get(rid)
        if checkpoint is not None:
            position, index = checkpoint
            blk = blocks[index]
            if not checkpoint_kept(self, request, position):
                # a transient state: its slot is overwritten, no key of it is any use
                keys.evict(blk)
                return None
            if keys.num_tokens(blk, (index + 1) * bs) == position:
                return None
            return keys.cache_partial_block(request, blk, position, self.kv_cache_group_id,
                                            (index + 1) * bs, replace=True)
        unit = self.block_pool.hash_block_size
        if num_tokens <= 0 or num_tokens % unit:
            return None
        if num_tokens != checkpoint_position(request.num_prompt_tokens, unit, self.replay_eagle) \
                and not self._at_junction(request, num_tokens):
            return None     # only the prompt's last hash boundary (and, opted in, the junction)
        index = cdiv(num_tokens, bs) - 1
        if index >= len(blocks) or blocks[index].is_null:
            return None
        source = blocks[index]
        if keys.num_tokens(source, (index + 1) * bs) == num_tokens:
            return None     # keyed there already (a hit, an earlier step)
        h = keys.cache_partial_block(request, source, num_tokens, self.kv_cache_group_id,
                                     (index + 1) * bs)
        if h is not None and num_tokens % bs:
            self.partial_hits[rid] = (index, source)
            self.num_cached_block[rid] = index
            self.producer_tails[rid] = num_tokens
        return h
