"""Full attention: every token is read forever, so a hit is a plain prefix of cached blocks."""

from __future__ import annotations

from kvcore.block import KVCacheBlock
from kvcore.block_hash_map import CachedBlocks
from kvcore.hashing import resolve_block_hashes
from kvcore.managers.base import SingleTypeKVCacheManager
from kvcore.managers.fine_lookup import full_attention_hit
from kvcore.specs import cdiv


class FullAttentionManager(SingleTypeKVCacheManager):
    @classmethod
    def find_longest_cache_hit(cls, block_hashes, max_length, kv_cache_group_ids, block_pool,
                               kv_cache_spec, drop_eagle_block=False, alignment_tokens=None):
        """Scan left to right and stop at the first miss: hashes are chained, so once one block
        misses every later one does too."""
        bs = kv_cache_spec.block_size
        if alignment_tokens is None:
            alignment_tokens = bs
        elif alignment_tokens < bs:
            # Partial hash hits: hits may end inside a block (`kvcore.managers.fine_lookup`).
            return full_attention_hit(block_hashes, max_length, kv_cache_group_ids, block_pool,
                                      bs, alignment_tokens, drop_eagle_block)
        hashes = resolve_block_hashes(block_hashes, block_pool.hash_block_size, bs)
        n = min(max_length // bs, len(hashes))
        cmap = block_pool.cached_block_hash_to_block
        if len(kv_cache_group_ids) == 1:
            # (typed: the compiled build gets and tests natively, not by a generic method call
            # and attribute read per block; a waiting head refused every step is looked up
            # every step with the CPU tier: offload_speed --sync with the tier 0.73G fewer
            # instructions of 19.4G, 1.53x -> 1.50x CPU time)
            m: dict[bytes, CachedBlocks] = cmap.group_map(kv_cache_group_ids[0])
            hit: list[KVCacheBlock] = []
            for i in range(n):
                v = m.get(hashes[i])
                if v is None:
                    break
                if isinstance(v, dict):
                    v = next(iter(v.values()))  # several blocks under one key: the first
                hit.append(v)
            computed: tuple[list[KVCacheBlock], ...] = (hit,)
        else:
            computed = tuple([] for _ in kv_cache_group_ids)
            for i in range(n):
                blocks = block_pool.get_cached_block(hashes[i], kv_cache_group_ids)
                if blocks is None:
                    break
                for lst, blk in zip(computed, blocks):
                    lst.append(blk)
        hit_length = len(computed[0]) * bs
        if drop_eagle_block and hit_length > 0:
            # EAGLE needs the last matched block's hidden states recomputed.
            hit_length -= min(alignment_tokens, bs)
        hit_length -= hit_length % alignment_tokens
        keep = cdiv(hit_length, bs)
        if keep < len(computed[0]):
            for lst in computed:
                del lst[keep:]
        return computed, hit_length
