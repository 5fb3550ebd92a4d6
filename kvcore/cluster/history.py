"""The routing-history indexes: what a router believes the replicas cache, learned only from
where it sent each prompt (no engine events).

* `HistoryLRU`: per replica, an LRU of block hashes with a capacity and an optional TTL, and
  for each hash the replicas holding it. llm-d's approximate prefix producer (a per-pod LRU of
  `CacheNumBlocks` entries, `approximateprefix/indexer.go`), SGLang's per-tenant radix tree
  (`policies/tree.rs`: with chained hashes a tree node is one hash, see `add`), and Dynamo's
  approximate indexer (`--no-kv-events`: blocks expire `router_ttl` after routing) are all this.
* `BlockTable`: one LRU of block hashes shared by all replicas, each entry naming the replicas
  routed that block, expiring when idle: AIBrix's `PrefixHashTable` (`prefixcacheindexer/hash.go`
  over `lrustore`).

Hashes are vLLM's chained block hashes (`RouteRequest.block_hashes`), so one hash names the
whole prefix up to its block: a tree path is a list of hashes, and "consecutive blocks from the
first" is a prefix match. `router_hashes` takes a coarser router block of m engine blocks.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def router_hashes(block_hashes: Sequence[int], m: int) -> list[int]:
    """The hashes of a router block of `m` engine blocks: every m-th engine hash (the chained
    hash of a router block's last engine block names the prefix through that router block).
    A trailing part of fewer than m engine blocks has no router hash."""
    return list(block_hashes[m - 1::m]) if m > 1 else list(block_hashes)


def predicted_tokens(blocks: int, block_tokens: int, prompt_len: int) -> int:
    """The hit in tokens a router predicts from `blocks` matched blocks of `block_tokens`:
    capped at the prompt's length - 1, as vLLM always recomputes the last prompt token."""
    return max(0, min(blocks * block_tokens, prompt_len - 1))


class HistoryLRU:
    """Per replica, the block hashes routed there, least recently routed first; a hash leaves
    a replica when the replica's LRU is over `capacity` (None: unbounded), when `trim` cuts
    it, or when it was last routed more than `ttl_ms` ago (None: never)."""

    __slots__ = ("capacity", "holders", "lru", "n", "owner", "ttl_ms")

    def __init__(self, n: int, capacity: int | None = None, ttl_ms: float | None = None,
                 track_owner: bool = False) -> None:
        self.n = n
        self.capacity = capacity
        self.ttl_ms = ttl_ms
        # per replica: hash -> the time (ms) of the add that last touched it
        self.lru: list[OrderedDict[int, float]] = [OrderedDict() for _ in range(n)]
        self.holders: dict[int, set[int]] = {}
        # hash -> the replica SGLang's tree would name for that node (see `owner_of`); kept
        # only for the router that reads it
        self.owner: dict[int, int] | None = {} if track_owner else None

    def add(self, replica: int, hashes: Iterable[int], now_ms: float = 0.0) -> None:
        """Record `hashes` as routed to `replica` now, touched in the order given (the last
        one given is the most recent). llm-d adds a prompt's blocks first to last; SGLang's
        tree evicts leaves first, which is this LRU when a path is added last to first."""
        lru = self.lru[replica]
        owner = self.owner
        for h in hashes:
            if h in lru:
                lru.move_to_end(h)
            else:
                held = self.holders.get(h)
                if held is None:
                    held = self.holders[h] = set()
                    if owner is not None:
                        owner[h] = replica      # this route created the node
                held.add(replica)
            lru[h] = now_ms
        if self.capacity is not None:
            self.trim(replica, self.capacity)

    def trim(self, replica: int, cap: int) -> None:
        """Drop `replica`'s least recently touched hashes until it holds at most `cap`."""
        lru = self.lru[replica]
        while len(lru) > cap:
            h, _ = lru.popitem(last=False)
            self._forget(h, replica)

    def expire(self, now_ms: float) -> None:
        """Drop every hash last touched more than `ttl_ms` before `now_ms` (touches come in
        time order, so the expired ones are at the front)."""
        if self.ttl_ms is None:
            return
        for replica, lru in enumerate(self.lru):
            while lru:
                h, t = next(iter(lru.items()))
                if now_ms - t <= self.ttl_ms:
                    break
                del lru[h]
                self._forget(h, replica)

    def _forget(self, h: int, replica: int) -> None:
        held = self.holders[h]
        held.discard(replica)
        if not held:
            del self.holders[h]
            if self.owner is not None:
                del self.owner[h]

    def holders_of(self, h: int) -> set[int]:
        return self.holders.get(h, set())

    def match(self, replica: int, hashes: Iterable[int]) -> int:
        """Consecutive hashes of `hashes`, from the first, that `replica` holds."""
        lru = self.lru[replica]
        k = 0
        for h in hashes:
            if h not in lru:
                break
            k += 1
        return k

    def longest(self, hashes: Iterable[int]) -> int:
        """Consecutive hashes from the first that some replica holds (a tree's deepest match)."""
        k = 0
        for h in hashes:
            if h not in self.holders:
                break
            k += 1
        return k

    def owner_of(self, h: int) -> int:
        """The replica SGLang's tree names for the node `h` (it must be held; `track_owner`).

        sgl-model-gateway `policies/tree.rs` @03744db (`prefix_match_with_counts`): a node caches
        one tenant, set when an insert creates the node (a split copies it to the new parent),
        and not changed when other tenants' inserts pass through; when the cached tenant no
        longer holds the node, the first key of the node's tenant map is taken and cached.
        Older builds took that first key every time. Either way the name does not follow the
        most recent route. The first key of a hash map has no order kvcli can reproduce: the
        lowest-numbered holder stands in for it.
        """
        assert self.owner is not None, "owner_of needs HistoryLRU(track_owner=True)"
        o = self.owner[h]
        held = self.holders[h]
        if o not in held:
            o = self.owner[h] = min(held)
        return o

    def size(self, replica: int) -> int:
        return len(self.lru[replica])


@dataclass(slots=True)
class _Block:
    t_ms: float                 # last time a replica was recorded for it
    replicas: set[int]


class BlockTable:
    """One LRU of block hashes for all replicas, `capacity` entries in all; an entry names the
    replicas its block was routed to and leaves when the table is over capacity or when no
    route touched it for more than `ttl_ms`. A lookup does not touch an entry (as AIBrix's
    `lrustore.Get`); `add` does."""

    __slots__ = ("capacity", "table", "ttl_ms")

    def __init__(self, capacity: int, ttl_ms: float | None) -> None:
        self.capacity = capacity
        self.ttl_ms = ttl_ms
        self.table: OrderedDict[int, _Block] = OrderedDict()

    def add(self, replica: int, hashes: Iterable[int], now_ms: float) -> None:
        for h in hashes:
            block = self.table.get(h)
            if block is None:
                self.table[h] = _Block(now_ms, {replica})
                if len(self.table) > self.capacity:
                    self.table.popitem(last=False)
            else:
                block.t_ms = now_ms
                block.replicas.add(replica)
                self.table.move_to_end(h)

    def expire(self, now_ms: float) -> None:
        if self.ttl_ms is None:
            return
        while self.table:
            h, block = next(iter(self.table.items()))
            if now_ms - block.t_ms <= self.ttl_ms:
                break
            del self.table[h]

    def match(self, hashes: Sequence[int], candidates: Iterable[int]) -> dict[int, int]:
        """Walk `hashes` from the first while some candidate still holds every block so far:
        each such candidate's count of consecutive matched blocks (absent: no match)."""
        alive = set(candidates)
        matched: dict[int, int] = {}
        for k, h in enumerate(hashes):
            block = self.table.get(h)
            if block is None:
                break
            alive &= block.replicas
            if not alive:
                break
            for r in alive:
                matched[r] = k + 1
        return matched
