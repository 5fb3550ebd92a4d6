"""`IdleRuns`: the LRU policy's idle chunks in eviction order, kept as sorted runs.

The LRU policy (`lru.py`) evicts the idle, unprotected chunk of lowest ``(rank, key)``. Its ranks
change in batches: a store job's chunks become idle together, a finished request re-ranks all
its chunks at once (fresh, increasing numbers), an access raises a request's chunks. So the idle
keys are held as **runs**: each batch is one list of keys sorted by ``(rank, key)`` (with its
ranks in a parallel list), and a small heap orders the runs by their heads. Taking victims walks
the lowest run until its next entry passes the head of the next run, then switches: the cost is
one comparison per victim and one heap operation per switch, not a heap push and pop of a
tuple per chunk.

Entries are never updated in place: an entry counts only while its key is resident, idle
(reference count 0) and still has that rank (a re-rank adds a new entry; a pinned or evicted key
leaves stale ones behind), so the order of the live entries is exactly the order of
``(rank, key)``. When stale entries outnumber the live ones, the runs are rebuilt as one.

Measured (conversation head 600, 8,192 GPU blocks, 32 GiB tier: 499k chunks stored and 483k
evicted; `benchmarks/offload_speed.py`): the per-chunk heap of ``(rank, key)`` tuples before it
took about a quarter of the whole compiled replay, a third of that in the cyclic garbage
collector walking the heap's millions of tuples.
"""

from __future__ import annotations

import heapq
from itertools import pairwise

from kvcore.offload.keys import ChunkStatus


class _Run:
    """Keys sorted by ``(rank, key)``, their ranks alongside; ``i`` is the next entry."""

    __slots__ = ("i", "keys", "ranks")

    def __init__(self, keys: list[bytes], ranks: list[int]) -> None:
        self.keys = keys
        self.ranks = ranks
        self.i = 0


class IdleRuns:
    """The idle chunks of a ``chunks`` dict (key -> status with its ``rank``), in
    ``(rank, key)`` order.

    The owner calls `add` with every key that becomes idle or gets a new rank while idle (and
    keeps ``num_idle`` true when a chunk stops being idle otherwise); `take` then evicts in
    order."""

    __slots__ = ("chunks", "heap", "live_entries", "num_idle", "seq")

    def __init__(self, chunks: dict[bytes, ChunkStatus]) -> None:
        self.chunks = chunks
        self.heap: list[tuple[int, bytes, int, _Run]] = []   # (head rank, head key, seq, run)
        self.seq = 0
        self.live_entries = 0             # entries not yet walked (live or stale)
        self.num_idle = 0

    def add(self, keys: list[bytes], in_order: bool = False, newly_idle: int = 0) -> None:
        """Entries for these keys at their current ranks (``in_order``: the ranks already
        increase along ``keys``, e.g. a fresh re-rank); ``newly_idle`` of them just became
        idle."""
        self.num_idle += newly_idle
        if not keys:
            return
        chunks = self.chunks
        rs = [chunks[k].rank for k in keys]
        if not in_order:
            keys, rs = _sorted(keys, rs)
        self._push(_Run(keys, rs))
        self.live_entries += len(keys)
        # Stale entries pile up under re-ranks; rebuild when they outnumber the live ones.
        if self.live_entries > max(64, 2 * self.num_idle):
            self.rebuild()

    def _push(self, run: _Run) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (run.ranks[run.i], run.keys[run.i], self.seq, run))

    def rebuild(self) -> None:
        chunks = self.chunks
        keys = [k for k, c in chunks.items() if c.ref_cnt == 0]
        keys, rs = _sorted(keys, [chunks[k].rank for k in keys])
        self.heap = []
        self.live_entries = 0
        if keys:
            self._push(_Run(keys, rs))
            self.live_entries = len(keys)

    def take(self, n: int, protected: set[bytes]) -> list[tuple[bytes, ChunkStatus]] | None:
        """Evict the ``n`` lowest idle chunks outside ``protected`` (removed from ``chunks``),
        or none at all (None) when there are fewer."""
        chunks = self.chunks
        held = 0
        for key in protected:
            chunk = chunks.get(key)
            if chunk is not None and chunk.ref_cnt == 0:
                held += 1
        if self.num_idle - held < n:
            return None
        heap = self.heap
        taken: list[tuple[bytes, ChunkStatus]] = []
        kept: list[bytes] = []           # protected keys passed over, in order
        walked = 0
        while len(taken) < n:
            _, _, _, run = heapq.heappop(heap)
            keys, rs, i = run.keys, run.ranks, run.i
            end = len(keys)
            if heap:
                lim_rank, lim_key = heap[0][0], heap[0][1]
            else:
                lim_rank, lim_key = rs[-1], keys[-1]
            start = i
            while i < end:
                r = rs[i]
                if r > lim_rank:
                    break
                key = keys[i]
                if r == lim_rank and key > lim_key:
                    break
                i += 1
                chunk = chunks.get(key)
                if chunk is None or chunk.ref_cnt != 0 or chunk.rank != r:
                    continue              # stale, or a duplicate entry of a chosen key
                if key in protected:
                    kept.append(key)
                    continue
                del chunks[key]
                taken.append((key, chunk))
                if len(taken) == n:
                    break
            walked += i - start
            run.i = i
            if i < end:
                self._push(run)
        self.live_entries -= walked
        self.num_idle -= n
        if kept:
            # passed over in order, so already sorted; still idle, same ranks
            self._push(_Run(kept, [chunks[k].rank for k in kept]))
            self.live_entries += len(kept)
        return taken

    def clear(self) -> None:
        self.heap = []
        self.live_entries = 0
        self.num_idle = 0


def _sorted(keys: list[bytes], rs: list[int]) -> tuple[list[bytes], list[int]]:
    """``keys`` and their ranks ``rs`` in ``(rank, key)`` order."""
    # A store job's chunks come tail first (ranks falling), a re-rank's rising: one pass tells.
    rising = falling = True
    prev = rs[0]
    for i in range(1, len(rs)):
        r = rs[i]
        if r <= prev:
            rising = False
        if r >= prev:
            falling = False
        prev = r
    if rising:
        return keys, rs
    if falling:
        return keys[::-1], rs[::-1]
    order = sorted(range(len(rs)), key=rs.__getitem__)
    keys = [keys[i] for i in order]
    rs = [rs[i] for i in order]
    for a, b in pairwise(rs):
        if a == b:      # equal ranks (keys of several groups at one position) go by key bytes
            pairs = sorted(zip(rs, keys))
            return [k for _, k in pairs], [r for r, _ in pairs]
    return keys, rs
