"""`KVCacheBlocks`: blocks per KV cache group, as the facade's calls return them.

vLLM's `KVCacheBlocks` (`vllm/v1/core/kv_cache_manager.py`, 0.33): ``blocks[i]`` holds group i's
blocks. `kvcore.kv_cache_manager` re-exports it.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvcore.block import KVCacheBlock


class KVCacheBlocks:
    """Blocks per group, as `allocate_slots` / `get_computed_blocks` return them."""

    __slots__ = ("blocks",)

    def __init__(self, blocks: tuple[Sequence[KVCacheBlock], ...]) -> None:
        self.blocks = blocks

    def get_block_ids(self) -> tuple[list[int], ...]:
        return tuple([b.block_id for b in g] for g in self.blocks)

    def __repr__(self) -> str:
        return f"KVCacheBlocks({self.get_block_ids()})"
