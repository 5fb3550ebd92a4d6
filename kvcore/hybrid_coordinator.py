"""`HybridKVCacheCoordinator`: several KV cache groups, looked up to 0.33's fixed point.

vLLM's `kv_cache_coordinator.py` (0.33), its hybrid kind (the shared plumbing is
`kvcore.coordinator.KVCacheCoordinator`). The prefix-cacheable groups with an equal spec and
manager form a `SpecGroup` and are looked up together (every one of them must hold a block).
The spec groups are visited full attention first, each lookup capped by the length the previous
one reached, until a whole round changes nothing; full attention is looked up once (any prefix
of its hit is a hit) and cut back to the agreed length at the end. Hits end on the scheduler
block (the groups' lcm), and only such prefixes are cached; with partial hash hits
(`kvcore.prefix_match`) hits end on the hash block and every prefix is cached.

EAGLE's block drop (the legacy hash mode) is decided per spec group: it drops when any of its
groups is in `drop_eagle_group_ids`. A dropping group looks up one block past the candidate
length (one hash block with partial hash hits: vLLM's `eagle_proof_margin`; capped by the
request's hashes) and drops as much, once per candidate length (vLLM's
`eagle_verified`, cleared when another group shortens the length); a dropping group caches one
block past the scheduler-aligned prefix (which matters only below the scheduler block).
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
    use_eagle: bool             # any of its groups drops EAGLE's last block


class HybridKVCacheCoordinator(KVCacheCoordinator):
    """Several groups: 0.33's fixed point over the spec groups (full attention first)."""

    def _finish_init(self) -> None:
        drops = self.drop_eagle_group_ids
        self.cacheable_alignment = 1 if self.partial_hits else self.scheduler_block_size
        for m in self.single_type_managers:
            # (a group outside prefix caching, a circular buffer, need not divide it)
            assert not m.prefix_cacheable or m.block_size % self.hash_block_size == 0
            m.cache_hit_alignment_tokens = self.hit_alignment
        spec_groups: list[SpecGroup] = []
        for i, m in enumerate(self.single_type_managers):
            if not m.prefix_cacheable:
                continue
            for k, sg in enumerate(spec_groups):
                if sg.spec == m.kv_cache_spec and sg.manager_cls is type(m):
                    sg.group_ids.append(i)
                    if i in drops and not sg.use_eagle:
                        spec_groups[k] = sg._replace(use_eagle=True)
                    break
            else:
                spec_groups.append(SpecGroup(m.kv_cache_spec, [i], type(m), i in drops))
        assert spec_groups, "at least one group must take part in prefix caching"
        # Full attention first (a stable sort): its left-to-right scan bounds the others.
        spec_groups.sort(key=lambda sg: not isinstance(sg.spec, FullAttentionSpec))
        self.attention_groups = spec_groups
        for sg in spec_groups:
            if sg.use_eagle:
                for gid in sg.group_ids:
                    self.single_type_managers[gid].use_eagle = True
        # (a dropping group below the scheduler block caches past the aligned prefix, and one
        # coarser than the hash block registers its prompt's tail from past it: the facade
        # then takes the general path, `cache_blocks` below)
        self.eagle_caching = tuple(m.use_eagle and (m.block_size < self.cacheable_alignment
                                                    or m.block_size != self.hash_block_size)
                                   for m in self.single_type_managers)
        if not any(self.eagle_caching):
            self.eagle_caching = ()
        # (a dropping group reads one drop unit past the length cap: `kvcore.lookup_memo`)
        self.lookup_margin = max((self._eagle_margin(m) for m in self.single_type_managers
                                  if m.use_eagle), default=0)

    def _eagle_margin(self, m: SingleTypeKVCacheManager) -> int:
        """What a dropping group matches past the candidate length, then drops (vLLM's
        `eagle_proof_margin`): with partial hash hits one hash block (full attention's and
        Mamba's managers look up at that grain), else one of the group's blocks."""
        if self.partial_hits and m.block_size > self.hash_block_size:
            return self.hash_block_size
        return m.block_size

    def get_num_cacheable_tokens(self, num_computed_tokens: int) -> int:
        # Only prefixes a later hit could end on (scheduler-block aligned; partial hits: all):
        # vLLM's `_align_cacheable`, its rounding fixed once in `cacheable_alignment`.
        return num_computed_tokens - num_computed_tokens % self.cacheable_alignment

    def cache_blocks(self, request, num_computed_tokens: int) -> None:
        if not self.eagle_caching:
            super().cache_blocks(request, num_computed_tokens)
            return
        n = self.get_num_cacheable_tokens(num_computed_tokens)
        for m, eagle in zip(self.single_type_managers, self.eagle_caching):
            if m.enable_caching:
                # EAGLE matches one block past the aligned boundary, then drops it
                m.cache_blocks(request, min(num_computed_tokens, n + m.block_size)
                               if eagle and n > 0 else n)

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
        managers = self.single_type_managers
        most = len(block_hashes) * self.hash_block_size
        verified: set[int] = set()      # spec groups whose drop holds at the current length
        while True:
            cur = hit_length
            for idx, (spec, group_ids, manager_cls, use_eagle) in enumerate(groups):
                first = group_ids[0]
                if isinstance(spec, FullAttentionSpec) and blocks_by_group[first] is not None:
                    # Downward closed: no second lookup, just cap by its earlier hit.
                    cur = min(cur, length_by_group[first])
                    continue
                drop = use_eagle and idx not in verified
                # (a dropping group matches one block more, then drops it; a Mamba group's
                # lookup never drops, as the draft has no Mamba layer: no block more)
                cap = min(cur + self._eagle_margin(managers[first]), most) \
                    if drop and spec.kind != "mamba" else cur
                hits, n = manager_cls.find_longest_cache_hit(
                    block_hashes, cap, group_ids, self.block_pool, spec, drop, align)
                if drop:
                    verified.add(idx)
                elif n < cur:
                    verified.clear()
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
