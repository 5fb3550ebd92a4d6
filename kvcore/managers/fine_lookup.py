"""Lookups at hash granularity (vLLM 0.33's fine-grained mode, partial hash hits on): the hash
block (`--prefix-match-unit`) is finer than the group's block, so a hit may end inside a block.

Each hash of ``block_hashes`` (one per hash block) chains over the whole prefix before it, so a
block's own key is the hash at its last hash boundary, and a partial entry
(`kvcore.partial_hashes`) is the hash at a boundary inside it: one key space.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kvcore.block import KVCacheBlock
from kvcore.specs import cdiv

if TYPE_CHECKING:
    from kvcore.block_pool import BlockPool


def full_attention_hit(block_hashes: list[bytes], max_length: int, group_ids: Sequence[int],
                       pool: BlockPool, block_size: int, unit: int, drop: bool = False
                       ) -> tuple[tuple[list[KVCacheBlock], ...], int]:
    """`FullAttentionManager.find_longest_cache_hit` with ``unit`` < ``block_size``: the run of
    cached whole blocks from the start (phase 1), then the first block after it probed at its
    inner boundaries from the highest down (phase 2, a partial block hit). ``drop``: EAGLE's
    drop, one hash block here (the last block's KV still covers the shorter hit)."""
    scale = block_size // unit
    hit: tuple[list[KVCacheBlock], ...] = tuple([] for _ in group_ids)
    for i in range(min(max_length // block_size, len(block_hashes) // scale)):
        blocks = pool.get_cached_block(block_hashes[(i + 1) * scale - 1], group_ids)
        if blocks is None:
            break
        for lst, blk in zip(hit, blocks):
            lst.append(blk)
    hit_length = len(hit[0]) * block_size
    first = len(hit[0]) * scale
    last = min(first + scale - 1, max_length // unit, len(block_hashes))
    for fine in range(last - 1, first - 1, -1):
        tail = pool.get_cached_block(block_hashes[fine], group_ids)
        if tail is None:
            continue
        for lst, blk in zip(hit, tail):
            lst.append(blk)
        hit_length = (fine + 1) * unit
        break
    if drop and hit_length > 0:
        hit_length -= unit
        keep = cdiv(hit_length, block_size)
        for lst in hit:
            del lst[keep:]
    return hit, hit_length


def mamba_hit(block_hashes: list[bytes], max_length: int, group_ids: Sequence[int],
              pool: BlockPool, block_size: int, unit: int
              ) -> tuple[tuple[list[KVCacheBlock], ...], int]:
    """`MambaManager.find_longest_cache_hit` with ``unit`` < ``block_size``: the latest state
    cached at any hash boundary, right to left, placed at the block holding it behind nulls."""
    scale = block_size // unit
    for fine in range(min(max_length // unit, len(block_hashes)) - 1, -1, -1):
        cached = pool.get_cached_block(block_hashes[fine], group_ids)
        if cached is None:
            continue
        pad = [pool.null_block] * (fine // scale)
        return tuple(pad + [blk] for blk in cached), (fine + 1) * unit
    return tuple([] for _ in group_ids), 0
