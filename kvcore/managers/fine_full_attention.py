"""Full attention with partial hash hits on (`--prefix-match-unit` finer than the block).

vLLM 0.33's `FullAttentionManager` when the hash block is finer than its block (the lookup's
phase 2 is `kvcore.managers.fine_lookup`):

* a hit ending inside a block (the last hit block shared, partly valid) takes a block more:
  `allocate_new_blocks` puts a private copy in its place (copy-on-write) and the request
  writes into that; both ends of the copy are held (the source keeps its hit reference, the
  copy one reference more) until the scheduler frees them after the step (`take_cow_blocks`);
  the copy is cached again as a whole block once full (the cached count stops before it);
* `cache_blocks` also registers the prompt's last hash boundary inside a block, ``num_prompt
  - 1`` floored to the hash block (``num_prompt`` in a group with EAGLE's drop;
  `_cache_partial_tail_block`: what a resend hits), as a partial entry of the block holding
  it (`kvcore.partial_hashes`).

A separate class so that full attention without a unit keeps the template's steps (and the
short allocation path, `kvcore.plain_step`); the coordinator picks it.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvcore.block import KVCacheBlock
from kvcore.managers.full_attention import FullAttentionManager
from kvcore.request import Request


class FineFullAttentionManager(FullAttentionManager):
    def _partial(self, new_computed_blocks: Sequence[KVCacheBlock], num_local: int) -> bool:
        return len(new_computed_blocks) > 0 and num_local % self.block_size != 0

    def get_num_blocks_to_allocate(self, request_id: str, num_tokens: int,
                                   new_computed_blocks: Sequence[KVCacheBlock],
                                   total_computed_tokens: int = 0,
                                   num_local_computed_tokens: int = 0,
                                   apply_admission_cap: bool = False,
                                   prefill_end: int = 0) -> int:
        n = super().get_num_blocks_to_allocate(
            request_id, num_tokens, new_computed_blocks, total_computed_tokens,
            num_local_computed_tokens, apply_admission_cap, prefill_end)
        if request_id not in self.num_cached_block and \
                self._partial(new_computed_blocks, num_local_computed_tokens):
            n += 1      # the copy of the partly hit block
        return n

    def allocate_new_blocks(self, request_id: str, num_tokens: int) -> list[KVCacheBlock]:
        hit = self.partial_hits.pop(request_id, None)
        if hit is None:
            return super().allocate_new_blocks(request_id, num_tokens)
        index, source = hit
        cow = self.block_pool.get_new_blocks(1)[0]
        if self.tracer is not None:
            self.tracer.on_allocate(self.kv_cache_group_id, [cow.id_obj])
        blocks = self.req_to_blocks[request_id]
        assert blocks[index] is source
        blocks[index] = cow
        self.pending_cow.append((source, cow))
        cow.ref_cnt += 1
        return [cow] + super().allocate_new_blocks(request_id, num_tokens)

    def cache_blocks(self, request: Request, num_tokens: int) -> None:
        super().cache_blocks(request, num_tokens)
        hbs = self.block_pool.hash_block_size
        # (a resend hits at most ``num_prompt - 1`` tokens; a dropping group's lookup reads the
        # whole prompt before it drops a hash block)
        limit = request.num_prompt_tokens - (0 if self.use_eagle else 1)
        boundary = min(limit // hbs, len(request.block_hashes)) * hbs
        if boundary == 0 or boundary > num_tokens or boundary % self.block_size == 0:
            return
        index = boundary // self.block_size
        blocks = self.req_to_blocks[request.request_id]
        if index >= len(blocks):
            return
        partial = self.block_pool.partial
        assert partial is not None
        partial.cache_partial_block(request, blocks[index], boundary, self.kv_cache_group_id,
                                    (index + 1) * self.block_size)
