"""`IdleRuns`: the LRU policy's idle chunks in eviction order, kept as sorted runs.

The LRU policy (`lru.py`) evicts the idle, unprotected chunk of lowest ``(rank, key)``. Its ranks
change in batches: a store job's chunks become idle together, a finished request re-ranks all
its chunks at once (fresh, increasing numbers), an access raises a request's chunks. So the idle
keys are held as **runs**: each batch is one list of keys sorted by ``(rank, key)`` (with its
ranks in a parallel list), and a small heap orders the runs by their heads. Taking victims walks
the lowest run until its next entry passes the head of the next run, then switches: the cost is
one comparison per victim and one heap operation per switch, not a heap push and pop of a
tuple per chunk.

Entries are never updated in place: an entry (key, status, rank) counts only while the status
is idle (reference count 0) and still has that rank (a re-rank adds a new entry; a pinned or
evicted chunk leaves stale ones behind), so the order of the live entries is exactly the order
of ``(rank, key)``. The entry holds the status object itself, so checking it reads no dict: an
evicted or removed chunk's status gets rank -1 (`FREED`) before its slot is reused, and a
reused status gets a new rank (a request's ``(number, position)`` or a fresh number), so a
stale entry is told by its rank without a dict lookup; only an entry whose rank matches is
checked against the status's own key (keys of several groups share a request's rank at one
position; the manager keeps a resident status's key, `keys.ChunkStatus`). When
stale entries outnumber the live ones, the runs are rebuilt as one.

Measured (conversation head 600, 8,192 GPU blocks, 32 GiB tier: 499k chunks stored and 483k
evicted; `benchmarks/offload_speed.py`): the per-chunk heap of ``(rank, key)`` tuples before it
took about a quarter of the whole compiled replay, a third of that in the cyclic garbage
collector walking the heap's millions of tuples.
"""

from __future__ import annotations

import heapq
from itertools import pairwise

from kvcore.offload.keys import NO_KEY, ChunkStatus

FREED = -1          # the rank of a status whose chunk left the tier (its slot is free)


class _Run:
    """Keys sorted by ``(rank, key)``, their statuses and ranks alongside; ``i`` is the next
    entry."""

    __slots__ = ("chunks", "i", "keys", "ranks")

    def __init__(self, keys: list[bytes], chunks: list[ChunkStatus], ranks: list[int]) -> None:
        self.keys = keys
        self.chunks = chunks
        self.ranks = ranks
        self.i = 0


class IdleRuns:
    """The idle chunks of a ``chunks`` dict (key -> status with its ``rank``), in
    ``(rank, key)`` order.

    The owner calls `add` with every key that becomes idle or gets a new rank while idle (and
    keeps ``num_idle`` true when a chunk stops being idle otherwise, and sets `FREED` on the
    status of a chunk it removes); `take` then evicts in order."""

    __slots__ = ("chunks", "heap", "live_entries", "num_idle", "seq")

    def __init__(self, chunks: dict[bytes, ChunkStatus]) -> None:
        self.chunks = chunks
        self.heap: list[tuple[int, bytes, int, _Run]] = []   # (head rank, head key, seq, run)
        self.seq = 0
        self.live_entries = 0             # entries not yet walked (live or stale)
        self.num_idle = 0

    def add(self, keys: list[bytes], cs: list[ChunkStatus] | None = None,
            in_order: bool = False, newly_idle: int = 0) -> None:
        """Entries for these keys at their current ranks (``cs``: their statuses, when the
        caller has them: no dict lookup; ``in_order``: the ranks already increase along
        ``keys``, e.g. a fresh re-rank); ``newly_idle`` of them just became idle."""
        self.num_idle += newly_idle
        if not keys:
            return
        if cs is None:
            chunks = self.chunks
            cs = [chunks[k] for k in keys]
        rs = [c.rank for c in cs]
        if not in_order:
            keys, cs, rs = _sorted(keys, cs, rs)
        self._push(_Run(keys, cs, rs))
        self.live_entries += len(keys)
        # Stale entries pile up under re-ranks; rebuild when they outnumber the live ones.
        if self.live_entries > max(64, 2 * self.num_idle):
            self.rebuild()

    def _push(self, run: _Run) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (run.ranks[run.i], run.keys[run.i], self.seq, run))

    def rebuild(self) -> None:
        keys = [k for k, c in self.chunks.items() if c.ref_cnt == 0]
        cs = [self.chunks[k] for k in keys]
        keys, cs, rs = _sorted(keys, cs, [c.rank for c in cs])
        self.heap = []
        self.live_entries = 0
        if keys:
            self._push(_Run(keys, cs, rs))
            self.live_entries = len(keys)

    def take(self, n: int, protected: set[bytes], freed: list[ChunkStatus]
             ) -> list[bytes] | None:
        """Evict the ``n`` lowest idle chunks outside ``protected``: removed from ``chunks``,
        their statuses `FREED` (key `NO_KEY`) and appended to ``freed``, their keys returned in
        order; or none at all (None) when there are fewer."""
        chunks = self.chunks
        held = 0
        for key in protected:
            chunk = chunks.get(key)
            if chunk is not None and chunk.ref_cnt == 0:
                held += 1
        if self.num_idle - held < n:
            return None
        heap = self.heap
        taken: list[bytes] = []
        kept: list[bytes] = []           # protected keys passed over, in order
        kept_chunks: list[ChunkStatus] = []
        walked = 0
        while len(taken) < n:
            _, _, _, run = heapq.heappop(heap)
            keys, cs, rs, i = run.keys, run.chunks, run.ranks, run.i
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
                chunk = cs[i]
                i += 1
                if chunk.rank != r or chunk.ref_cnt != 0:
                    continue              # stale, or a duplicate entry of a chosen chunk
                # its status reused under another key at this rank (keys of several groups
                # share a request's rank at one position); the status's own key tells, where a
                # dict lookup per victim did (MEASURE)
                own = chunk.key
                if own is not key and own != key:
                    continue
                if protected and key in protected:
                    kept.append(key)
                    kept_chunks.append(chunk)
                    continue
                del chunks[key]
                chunk.rank = FREED
                chunk.key = NO_KEY
                taken.append(key)
                freed.append(chunk)
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
            self._push(_Run(kept, kept_chunks, [c.rank for c in kept_chunks]))
            self.live_entries += len(kept)
        return taken

    def clear(self) -> None:
        self.heap = []
        self.live_entries = 0
        self.num_idle = 0


def _sorted(keys: list[bytes], cs: list[ChunkStatus], rs: list[int]
            ) -> tuple[list[bytes], list[ChunkStatus], list[int]]:
    """``keys``, their statuses ``cs`` and ranks ``rs`` in ``(rank, key)`` order."""
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
        return keys, cs, rs
    if falling:
        return keys[::-1], cs[::-1], rs[::-1]
    order = sorted(range(len(rs)), key=rs.__getitem__)
    for a, b in pairwise(order):
        if rs[a] == rs[b]:  # equal ranks (keys of several groups at one position): key bytes
            order = sorted(range(len(rs)), key=lambda j: (rs[j], keys[j]))
            break
    return [keys[j] for j in order], [cs[j] for j in order], [rs[j] for j in order]
