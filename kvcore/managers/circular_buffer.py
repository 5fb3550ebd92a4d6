"""Circular buffer (vLLM 0.33's `CircularBufferManager`): one block per request, for its life.

A compressing attention layer (DeepSeek-V4.1's CSA compressor, GLM-5-Next, Step5, Qwen4-Exp)
keeps the raw keys of the token group it has not compressed yet in a ring of ``block_size``
slots. The ring covers no token range, so:

* a request claims its one block on its first allocation (new tokens or a KV connector's
  external ones) and never another, however long it grows; it is freed with the request;
* the group takes no part in prefix caching: no lookup (the hybrid coordinator leaves it out,
  its slot in a hit stays empty), no hits adopted, nothing registered, nothing skipped. Its
  block size is left out of the hash block (`kvcore.coordinator`).

vLLM records the ring's block for worker-side zeroing only for spec types that are zeroed; it
excludes this one. kvcli models no zeroing lists.
"""

from __future__ import annotations

from kvcore.block import KVCacheBlock
from kvcore.managers.base import SingleTypeKVCacheManager


class CircularBufferManager(SingleTypeKVCacheManager):
    prefix_cacheable = False

    def _claim_ring_block(self, request_id: str) -> list[KVCacheBlock]:
        table = self.req_to_blocks.setdefault(request_id, [])
        if table:
            return []
        new = self.block_pool.get_new_blocks(1)
        table.extend(new)
        if self.tracer is not None:
            self.tracer.on_allocate(self.kv_cache_group_id, [b.id_obj for b in new])
        return new

    def get_num_blocks_to_allocate(self, request_id, num_tokens, new_computed_blocks,
                                   total_computed_tokens=0, num_local_computed_tokens=0,
                                   apply_admission_cap=False, prefill_end=0) -> int:
        return 0 if self.req_to_blocks.get(request_id) else 1

    def allocate_new_blocks(self, request_id: str, num_tokens: int) -> list[KVCacheBlock]:
        return self._claim_ring_block(request_id)

    def allocate_external_computed_blocks(self, request_id: str, num_local_computed_tokens: int,
                                          num_external_computed_tokens: int) -> None:
        self._claim_ring_block(request_id)

    def add_local_computed_blocks(self, request_id, new_computed_blocks,
                                  num_local_computed_tokens, num_external_computed_tokens=0):
        # (a lookup never hits here: the hit's entry for this group is always empty)
        return

    def cache_blocks(self, request, num_tokens: int) -> None:
        return

    @classmethod
    def find_longest_cache_hit(cls, block_hashes, max_length, kv_cache_group_ids, block_pool,
                               kv_cache_spec, drop_eagle_block=False, alignment_tokens=None):
        return tuple([] for _ in kv_cache_group_ids), 0
