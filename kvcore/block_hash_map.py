"""`BlockHashToBlockMap`: the prefix-cache map, (block hash, group id) -> cached block(s).

vLLM's class of the same name in `vllm/v1/core/block_pool.py` (0.33); `kvcore.block_pool`
re-exports it. Blocks with identical content are never deduplicated (block tables stay
append-only), so a key may hold several blocks. As in vLLM a key maps to the block itself, or to
a dict ``{block_id: block}`` (insertion ordered) once a second block arrives; a lookup returns the
first. Keys are kept in one dict per group (the same key space as vLLM's hash+group bytes,
without building the concatenation on every lookup).
"""

from __future__ import annotations

from collections.abc import Iterator

from kvcore.block import KVCacheBlock

# What one key holds: the block, or {block_id: block} once a second block shares the key.
CachedBlocks = KVCacheBlock | dict[int, KVCacheBlock]


class BlockHashToBlockMap:
    __slots__ = ("by_group",)

    def __init__(self, num_groups: int = 1) -> None:
        # by_group[g]: group g's keys, ``{block_hash: CachedBlocks}``. Public: read directly by
        # the pool's hottest loop (`BlockPool.get_new_blocks`); others go through `group_map`.
        self.by_group: list[dict[bytes, CachedBlocks]] = [{} for _ in range(max(1, num_groups))]

    @property
    def num_groups(self) -> int:
        return len(self.by_group)

    def group_map(self, group: int) -> dict[bytes, CachedBlocks]:
        """Group ``group``'s dict (created on first use)."""
        maps = self.by_group
        while group >= len(maps):
            maps.append({})
        return maps[group]

    def get_one_block(self, block_hash: bytes, group: int) -> KVCacheBlock | None:
        v = self.group_map(group).get(block_hash)
        if v is None or type(v) is KVCacheBlock:
            return v
        return next(iter(v.values()))

    def contain(self, block_hash: bytes, group: int, block_id: int) -> bool:
        v = self.group_map(group).get(block_hash)
        if v is None:
            return False
        if type(v) is KVCacheBlock:
            return v.block_id == block_id
        return block_id in v

    def insert(self, block_hash: bytes, group: int, block: KVCacheBlock) -> None:
        m = self.group_map(group)
        v = m.get(block_hash)
        if v is None:
            m[block_hash] = block
        elif type(v) is KVCacheBlock:
            m[block_hash] = {v.block_id: v, block.block_id: block}
        else:
            v[block.block_id] = block

    def pop(self, block_hash: bytes, group: int, block_id: int) -> KVCacheBlock | None:
        """Remove ``block_id`` from the key; None (and nothing changes) if it is not there."""
        m = self.group_map(group)
        v = m.get(block_hash)
        if v is None:
            return None
        if type(v) is KVCacheBlock:
            if v.block_id == block_id:
                del m[block_hash]
                return v
            return None
        blk = v.pop(block_id, None)
        if not v:
            del m[block_hash]
        return blk

    def __len__(self) -> int:
        return sum(len(m) for m in self.by_group)

    def items(self) -> Iterator[tuple[bytes, int, list[KVCacheBlock]]]:
        """Every key as ``(hash, group, blocks)`` (tests, invariants)."""
        for g, m in enumerate(self.by_group):
            for h, v in m.items():
                yield h, g, ([v] if type(v) is KVCacheBlock else list(v.values()))
