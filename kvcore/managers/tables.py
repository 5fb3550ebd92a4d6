"""`BlockTables`: what one KV cache group holds for each request, and how it lets go of it.

The root of `kvcore.managers.base.SingleTypeKVCacheManager` (vLLM keeps both halves in one
class; split here so that each file reads as one idea). State:

* ``req_to_blocks[req_id]``   the block table (index = logical block), null blocks where the
                              group holds nothing (positions out of a sliding window)
* ``num_cached_block[req_id]`` how many leading entries are registered in the prefix cache;
                              present only once the request has blocks cached or adopted hits
* ``partial_hits``, ``pending_cow`` partial hash hits' copies (`--prefix-match-unit`)

The release side: the whole table when a request finishes (`free`, or vLLM's deferred free in
two halves), and during the request the leading blocks attention no longer reads
(`get_num_skipped_tokens`, freed early and nulled by `remove_skipped_blocks`). A kind that
skips tokens also states the inverse at block granularity (`tokens_to_skip_block`), which
`kvcore.quiet_steps` reads to know how long a decoding request frees nothing.
"""

from __future__ import annotations

from abc import ABC
from typing import TYPE_CHECKING, Any, ClassVar

from kvcore.block import KVCacheBlock

if TYPE_CHECKING:
    from kvcore.block_pool import BlockPool
    from kvcore.tracing import BlockTracer


# ABC on the root: `SingleTypeKVCacheManager` declares its lookup abstract and inherits
# ABCMeta from here, one base each (the compiled classes stay a plain chain).
class BlockTables(ABC):
    # Whether attention ever stops reading leading tokens (lets full attention skip the
    # remove_skipped_blocks call entirely).
    skips_tokens: ClassVar[bool] = False

    def __init__(self, block_pool: BlockPool, block_size: int, kv_cache_group_id: int,
                 tracer: BlockTracer | None) -> None:
        self.block_pool = block_pool
        self.block_size = block_size
        self.kv_cache_group_id = kv_cache_group_id
        self.tracer = tracer
        self.req_to_blocks: dict[str, list[KVCacheBlock]] = {}
        self.num_cached_block: dict[str, int] = {}
        self._null_block = block_pool.null_block
        # Partial hash hits: request -> (index, block) of a hit inside a block, to copy; the
        # step's copies (source, copy), held until the scheduler frees them (`take_cow_blocks`)
        self.partial_hits: dict[str, tuple[int, KVCacheBlock]] = {}
        self.pending_cow: list[tuple[KVCacheBlock, KVCacheBlock]] = []

    # --- what attention no longer reads -------------------------------------------------
    def get_num_skipped_tokens(self, num_computed_tokens: int) -> int:
        """Leading tokens attention no longer reads once ``num_computed_tokens`` are computed."""
        return 0

    def tokens_to_skip_block(self, block_index: int) -> int:
        """The fewest computed tokens at which attention no longer reads block ``block_index``
        (-1: it reads every block for ever). Exactly: ``get_num_skipped_tokens(n) //
        block_size > block_index`` holds for every ``n`` from this on and for none below it.
        A kind that overrides `get_num_skipped_tokens` overrides this with it."""
        return -1

    # --- release ----------------------------------------------------------------------
    def free(self, request_id: str) -> None:
        """Release the request's table, tail first: its deepest blocks are evicted first."""
        self.free_popped(self.pop_blocks_for_free(request_id))

    def pop_blocks_for_free(self, request_id: str) -> list[KVCacheBlock]:
        """Drop the request's table without releasing it (vLLM's deferred free, under async
        scheduling with a KV connector); `free_popped` releases it later."""
        self.num_cached_block.pop(request_id, None)
        if self.partial_hits:
            self.partial_hits.pop(request_id, None)
        return self.req_to_blocks.pop(request_id, None) or []

    def free_popped(self, blocks: list[KVCacheBlock]) -> None:
        """Release a table `pop_blocks_for_free` took, tail first."""
        if not blocks:
            return
        self._release(blocks[::-1])

    def _release(self, ordered: list[KVCacheBlock]) -> None:
        """Free ``ordered`` (the first given is evicted first) and tell the tracer which blocks
        were released (null blocks left out), which reached 0 references, and which of those
        stay cached (evictable): lists the pool's release fills on its way."""
        tracer = self.tracer
        if tracer is None:
            self.block_pool.free_blocks(ordered)
            return
        ids: list[Any] = []
        freed: list[Any] = []
        evictable: list[Any] = []
        self.block_pool.free_blocks(ordered, (ids, freed, evictable))
        if ids:
            tracer.on_free(self.kv_cache_group_id, ids, freed, evictable)

    def remove_skipped_blocks(self, request_id: str, processed_computed_tokens: int,
                              num_prompt_tokens: int | None = None) -> None:
        """Free the blocks attention no longer reads and null their table entries.
        (``num_prompt_tokens``: only R-SWA reads it, `kvcore.managers.rswa`.)

        ``processed_computed_tokens``: computed tokens less those in flight (async). Runs after
        the admission check, before the step's fit check (it frees even if that fails). Walks
        from the last skipped block down to the first null entry: the later is freed first."""
        skipped_tokens = self.get_num_skipped_tokens(processed_computed_tokens)
        if skipped_tokens <= 0:
            return
        blocks = self.req_to_blocks.setdefault(request_id, [])
        self._null_range(blocks, 0, min(skipped_tokens // self.block_size, len(blocks)))

    def _null_range(self, blocks: list[KVCacheBlock], first: int, last: int) -> None:
        """Free ``blocks[first:last]`` from the last down to the first entry already null,
        nulling each entry (the sliding window's walk; R-SWA's over its gap)."""
        null = self._null_block
        removed = []
        for i in range(last - 1, first - 1, -1):
            blk = blocks[i]
            if blk is null:
                break
            removed.append(blk)
            blocks[i] = null
        if removed:
            self._release(removed)

    def take_cow_blocks(self) -> list[KVCacheBlock]:
        """The step's copies' ends, (source, copy) per copy, to free once; forgotten here."""
        if not self.pending_cow:
            return []
        out = [b for pair in self.pending_cow for b in pair]
        self.pending_cow = []
        return out
