"""Chunked local attention (Llama 4): a token reads only the tokens of its own chunk.

With chunk size C, the token at position p reads positions [p // C * C, p]. So once
``n`` tokens are computed, the ``n // C * C`` tokens before the current chunk are never read
again: their blocks are freed during the request and their entries nulled. A lookup for a
prefix of ``max_length`` tokens only needs the blocks of the last, partly filled chunk: the
result starts with nulls up to that chunk's first block, then the cached blocks from there on
until the first miss. C=8, bs=4: max_length 15 gives [null, null, blk3] when block 3 is cached,
else [null, null]; max_length 16 gives four nulls (the next token starts a fresh chunk).
"""

from __future__ import annotations

from kvcore.errors import LookupAssertion
from kvcore.hashing import resolve_block_hashes
from kvcore.managers.base import SingleTypeKVCacheManager
from kvcore.specs import ChunkedLocalAttentionSpec, cdiv


def max_admission_blocks(spec: ChunkedLocalAttentionSpec, max_in_flight_tokens: int,
                         max_model_len: int) -> int:
    """Most blocks one request holds at once: one chunk plus the tokens in flight."""
    return cdiv(min(spec.attention_chunk_size + max_in_flight_tokens, max_model_len),
                spec.block_size)


class ChunkedLocalAttentionManager(SingleTypeKVCacheManager):
    skips_tokens = True

    def _finish_init(self) -> None:
        spec = self.kv_cache_spec
        assert isinstance(spec, ChunkedLocalAttentionSpec)
        self.attention_chunk_size = spec.attention_chunk_size

    @classmethod
    def admission_cap(cls, spec, max_in_flight_tokens: int, max_model_len: int) -> int | None:
        return max_admission_blocks(spec, max_in_flight_tokens, max_model_len)

    @classmethod
    def find_longest_cache_hit(cls, block_hashes, max_length, kv_cache_group_ids, block_pool,
                               kv_cache_spec, drop_eagle_block=False, alignment_tokens=None):
        bs = kv_cache_spec.block_size
        # vLLM asserts both: chunked local attention supports neither EAGLE nor groups whose
        # block sizes differ (a replay says it as its start-up foresaw: `first_lookup`).
        if drop_eagle_block:
            raise LookupAssertion("chunked local attention does not support EAGLE")
        if alignment_tokens is not None and alignment_tokens != bs:
            raise LookupAssertion("chunked local attention needs every group to have the same "
                                  f"block size (block {bs}, hit alignment {alignment_tokens})")
        hashes = resolve_block_hashes(block_hashes, block_pool.hash_block_size, bs)
        chunk = kv_cache_spec.attention_chunk_size
        start_block = (max_length // chunk * chunk) // bs if max_length > 0 else 0
        max_blocks = max_length // bs
        null = block_pool.null_block
        computed = tuple([null] * start_block for _ in kv_cache_group_ids)
        for i in range(start_block, min(max_blocks, len(hashes))):
            cached = block_pool.get_cached_block(hashes[i], kv_cache_group_ids)
            if cached is None:
                break
            for lst, blk in zip(computed, cached):
                lst.append(blk)
        return computed, len(computed[0]) * bs

    def get_num_skipped_tokens(self, num_computed_tokens: int) -> int:
        """The tokens before the current chunk: C=8 gives 13 -> 8, 8 -> 8, 7 -> 0."""
        return num_computed_tokens // self.attention_chunk_size * self.attention_chunk_size

    def tokens_to_skip_block(self, block_index: int) -> int:
        """The first chunk edge at or past block ``i``'s end: C=8, bs=4 skips blocks 0 and 1
        from 8 on, block 2 from 16 on."""
        chunk = self.attention_chunk_size
        return -(-(block_index + 1) * self.block_size // chunk) * chunk
