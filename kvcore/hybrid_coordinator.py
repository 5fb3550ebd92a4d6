"""`HybridKVCacheCoordinator`: several KV cache groups, looked up to 0.33's fixed point.

vLLM's `kv_cache_coordinator.py` (0.33), its hybrid kind (the shared plumbing is
`kvcore.coordinator.KVCacheCoordinator`). The prefix-cacheable groups with an equal spec and
manager form a `SpecGroup` and are looked up together (every one of them must hold a block).
The spec groups are visited full attention first, each lookup capped by the length the previous
one reached, until a whole round changes nothing; full attention is looked up once (any prefix
of its hit is a hit) and cut back to the agreed length at the end. Hits end on the scheduler
block (the groups' lcm), and only such prefixes are cached; with partial hash hits
(`kvcore.prefix_match`) hits end on the hash block and every prefix is cached.
"""

from __future__ import annotations

from typing import NamedTuple

from kvcore.block import KVCacheBlock
from kvcore.coordinator import KVCacheCoordinator
from kvcore.managers.base import SingleTypeKVCacheManager
from kvcore.specs import FullAttentionSpec, KVCacheSpec, cdiv


class SpecGroup(NamedTuple):
    """Groups with an equal spec and manager, looked up together."""

    spec: KVCacheSpec
    group_ids: list[int]
    manager_cls: type[SingleTypeKVCacheManager]


class HybridKVCacheCoordinator(KVCacheCoordinator):
    """Several groups: 0.33's fixed point over the spec groups (full attention first)."""

    def _finish_init(self) -> None:
        assert not self.use_eagle, "EAGLE with several KV cache groups is not modelled"
        self.cacheable_alignment = 1 if self.partial_hits else self.scheduler_block_size
        for m in self.single_type_managers:
            assert m.block_size % self.hash_block_size == 0
            m.cache_hit_alignment_tokens = self.hit_alignment
        spec_groups: list[SpecGroup] = []
        for i, m in enumerate(self.single_type_managers):
            if not m.prefix_cacheable:
                continue
            for sg in spec_groups:
                if sg.spec == m.kv_cache_spec and sg.manager_cls is type(m):
                    sg.group_ids.append(i)
                    break
            else:
                spec_groups.append(SpecGroup(m.kv_cache_spec, [i], type(m)))
        assert spec_groups, "at least one group must take part in prefix caching"
        # Full attention first (a stable sort): its left-to-right scan bounds the others.
        spec_groups.sort(key=lambda sg: not isinstance(sg.spec, FullAttentionSpec))
        self.attention_groups = spec_groups

    def get_num_cacheable_tokens(self, num_computed_tokens: int) -> int:
        # Only prefixes a later hit could end on (scheduler-block aligned; partial hits: all):
        # vLLM's `_align_cacheable`, its rounding fixed once in `cacheable_alignment`.
        return num_computed_tokens - num_computed_tokens % self.cacheable_alignment

    def find_longest_cache_hit(self, block_hashes, max_cache_hit_length):
        num_groups = len(self.single_type_managers)
        hit_length = max_cache_hit_length
        longest = 0
        blocks_by_group: list[list[KVCacheBlock] | None] = [None] * num_groups
        length_by_group = [0] * num_groups
        groups = self.attention_groups
        # One full-attention spec group plus one other: a single round is enough.
        simple = len(groups) == 2 and isinstance(groups[0].spec, FullAttentionSpec)
        align = self.hit_alignment
        while True:
            cur = hit_length
            for spec, group_ids, manager_cls in groups:
                first = group_ids[0]
                if isinstance(spec, FullAttentionSpec) and blocks_by_group[first] is not None:
                    # Downward closed: no second lookup, just cap by its earlier hit.
                    cur = min(cur, length_by_group[first])
                    continue
                hits, n = manager_cls.find_longest_cache_hit(
                    block_hashes, cur, group_ids, self.block_pool, spec, False, align)
                cur = n
                for gid, blks in zip(group_ids, hits):
                    blocks_by_group[gid] = blks
                    length_by_group[gid] = n
                longest = max(longest, cur)
            if cur >= hit_length:
                break
            hit_length = cur
            if simple:
                break
        # Cut every full-attention group back to the agreed length.
        for sg in groups:
            if not isinstance(sg.spec, FullAttentionSpec):
                continue
            keep = cdiv(hit_length, self.single_type_managers[sg.group_ids[0]].block_size)
            for gid in sg.group_ids:
                held = blocks_by_group[gid]
                if held is not None:
                    del held[keep:]
                    length_by_group[gid] = hit_length
        hits = tuple(b if b is not None else [] for b in blocks_by_group)
        return hits, hit_length, longest - hit_length
