"""Cross-attention (encoder-decoder models such as Whisper): the decoder reads the encoder's
states, which depend on the request's own audio/image input, so they are never shared.

The group is sized by the request's encoder tokens (the coordinator passes
``num_encoder_tokens``), allocated once, and freed with the request. It never caches: no hits
are adopted, nothing is registered, and a lookup is an error (vLLM raises as well).
"""

from __future__ import annotations

from kvcore.managers.base import SingleTypeKVCacheManager


class CrossAttentionManager(SingleTypeKVCacheManager):
    prefix_cacheable = False
    uses_encoder_tokens = True

    def add_local_computed_blocks(self, request_id, new_computed_blocks,
                                  num_local_computed_tokens, num_external_computed_tokens=0):
        if any(not b.is_null for b in new_computed_blocks):
            raise AssertionError("cross-attention blocks are never cached, so never hit")
        self.req_to_blocks.setdefault(request_id, [])

    def cache_blocks(self, request, num_tokens: int) -> None:
        # Encoder states are per request; registering them would let another request with the
        # same decoder prefix but a different input adopt them.
        return

    @classmethod
    def find_longest_cache_hit(cls, block_hashes, max_length, kv_cache_group_ids, block_pool,
                               kv_cache_spec, drop_eagle_block=False, alignment_tokens=None):
        raise NotImplementedError("cross-attention does not take part in prefix caching")
