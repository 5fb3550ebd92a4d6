"""A waiting head's prefix-cache lookup, kept while nothing it read can have changed.

When the first waiting request cannot be admitted (too few free blocks, or no budget left), the
scheduler looks it up again at the next step, and the next, as vLLM 0.33's does: on the first
3,000 conversation requests with gpt-oss-20b (16,384 blocks) 51,665 `get_computed_blocks` calls,
48,661 of them repeating the call before (0.84 s of 7.1 s CPU, pure Python). A lookup has no
side effects (0.33 records the prefix-cache stats at admission, never in the lookup; the
connector's answer is asked for apart, every time), and its answer is a function of three
things only: the request's hashes, the length cap, and what the pool's prefix-cache map holds
under the hashes the managers' `find_longest_cache_hit` read (not its computed tokens).
Measured (`benchmarks/replay_user_cpu.py`, that run, user CPU old / new, medians of 5
interleaved): 4,066 full lookups left; compiled 1.12x async, 1.10x sync; llama-3.1-8b at 8,192
blocks 1.11x async; no refused head (150,000 blocks) 1.01x (docs/replay-speed.md).

So when the same request is looked up twice in a row with the same inputs, the second lookup's
answer is kept, with a *watch*: the set of hashes the lookup may have read, handed to the pool
(`BlockPool.lookup_watch`). Every change of the map passes through the pool, which drops the
watch (sets it to None) when it caches or evicts a block under a watched hash (`cache_full_blocks`,
`get_new_blocks`, `_drop_hash`) or forgets everything (`reset_prefix_cache`); so does any change
of which block a hash maps to (a duplicate key's first block goes only with an eviction under
that hash). A kept answer is returned while the pool still holds its watch and the request's
inputs (its object, the cap, its number of hashes; its preemptions, belt and braces) are the
same. Otherwise the lookup runs in full, as before.

What a lookup reads, per manager (all groups hashed at the hash block size, no partial hash
hits: otherwise there is no memo):

* full attention: hashes 0 .. its first miss (a left-to-right scan), at most ``W = min(cap //
  block, len(hashes))``; chunked local: from its chunk's start to its first miss. Alone, their
  hit ends at that miss: ``n // block + 1`` hashes (one more for EAGLE's dropped block).
* with several groups, full attention is looked up first (the coordinator's order) and every
  other lookup is capped by its hit, so nothing past its first miss is read: ``(n +
  uncached) // block + 1`` hashes (``n + uncached`` is the longest single hit: full
  attention's).
* sliding window and Mamba scan from the cap down; without a full-attention group: all ``W``.
* with several groups and EAGLE's block drop, a dropping group looks up one block past its cap
  (``W`` counts from the cap plus that block) and drops it: full attention's miss is then at
  most one block past the longest hit, as alone.

The watch takes one more hash than that (slack; a spare hash only costs a spurious refresh).
The pool's checks run only while a watch is set, so a replay without refused heads pays one
None test per pool call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.managers.chunked_local import ChunkedLocalAttentionManager
from kvcore.managers.full_attention import FullAttentionManager
from kvcore.managers.mamba import MambaManager
from kvcore.managers.sliding_window import SlidingWindowManager
from kvcore.specs import FullAttentionSpec

if TYPE_CHECKING:
    from kvcore.block_pool import BlockPool
    from kvcore.coordinator import KVCacheCoordinator
    from kvcore.kv_cache_blocks import KVCacheBlocks
    from kvcore.request import Request

# The managers whose lookup reads nothing but the hashes, the cap and the pool's map (exact
# classes: a subclass, e.g. the partial-hit ones, may read more). Cross-attention is never
# looked up.
PURE_LOOKUPS = (FullAttentionManager, ChunkedLocalAttentionManager, SlidingWindowManager,
                MambaManager)
# Lookups that stop at their first miss: alone, their hit bounds what they read.
PREFIX_SCANS = (FullAttentionManager, ChunkedLocalAttentionManager)


def memo_rule(coord: KVCacheCoordinator) -> int:
    """0: no memo for this stack; 1: the lookup reads up to its longest hit's first miss;
    2: it may read every hash under the cap."""
    if not coord.enable_caching or coord.block_pool.partial is not None:
        return 0
    looked_up = [m for m in coord.single_type_managers if m.prefix_cacheable]
    if not looked_up or any(type(m) not in PURE_LOOKUPS or m.block_size != coord.hash_block_size
                            for m in looked_up):
        return 0
    if len(coord.single_type_managers) == 1:
        return 1 if type(looked_up[0]) in PREFIX_SCANS else 2
    # (hybrid) full attention's hit is cut to the hit alignment: then it ends before its miss
    first = coord.attention_groups[0]    # type: ignore[attr-defined]
    return 1 if isinstance(first.spec, FullAttentionSpec) \
        and first.manager_cls is FullAttentionManager \
        and coord.hit_alignment == coord.hash_block_size else 2


def lookup_memo(coord: KVCacheCoordinator) -> LookupMemo | None:
    """The memo for this stack, or None where its lookups are not proven to keep."""
    rule = memo_rule(coord)
    return LookupMemo(coord.block_pool, rule, coord.hash_block_size,
                      coord.lookup_margin) if rule else None


class LookupMemo:
    """The last lookup's request and inputs, and (once it repeated) its watched answer."""

    def __init__(self, pool: BlockPool, rule: int, block_size: int, margin: int = 0) -> None:
        self.pool = pool
        self.margin = margin        # tokens read past the cap (hybrid EAGLE's dropped block)
        self.prefix_rule = rule == 1
        self.block_size = block_size
        self.req: Request | None = None
        self.cap = -1
        self.num_hashes = -1
        self.num_preemptions = -1
        self.watch: set[bytes] | None = None
        self.answer: tuple[KVCacheBlocks, int, int] | None = None

    def holds(self, request: Request, cap: int) -> bool:
        """Whether the kept answer is this lookup's."""
        watch = self.watch
        return (watch is not None and self.pool.lookup_watch is watch and request is self.req
                and cap == self.cap and len(request.block_hashes) == self.num_hashes
                and request.num_preemptions == self.num_preemptions)

    def note(self, request: Request, cap: int, answer: tuple[KVCacheBlocks, int, int],
             longest: int) -> None:
        """After a full lookup (``longest``: its longest single-group hit, in tokens): watch
        it if it repeated the one before, else remember its inputs only."""
        hashes = request.block_hashes
        if request is self.req and cap == self.cap and len(hashes) == self.num_hashes \
                and request.num_preemptions == self.num_preemptions:
            bs = self.block_size
            reach = min((cap + self.margin) // bs, len(hashes))
            if self.prefix_rule:
                reach = min(reach, longest // bs + 2)
            watch = set(hashes[:reach])
            self.watch = self.pool.lookup_watch = watch
            self.answer = answer
            return
        self.forget()
        self.req = request
        self.cap = cap
        self.num_hashes = len(hashes)
        self.num_preemptions = request.num_preemptions

    def forget(self) -> None:
        """Keep nothing (the request was admitted, or another one is looked up)."""
        if self.watch is not None:
            if self.pool.lookup_watch is self.watch:
                self.pool.lookup_watch = None
            self.watch = None
            self.answer = None
        self.req = None
