"""`IdleRuns`: the LRU policy's idle chunks in eviction order, kept as sorted runs.

The LRU policy (`lru.py`) evicts the idle, unprotected chunk of lowest ``(rank, key)``. Its ranks
change in batches: a store job's chunks become idle together, a finished request re-ranks all
its chunks at once (fresh, increasing numbers), an access raises a request's chunks. So the idle
chunks are held as **runs**: each batch is one list of statuses sorted by ``(rank, key)``, and a
small heap orders the runs by their heads. Taking victims walks the lowest run until its next
entry passes the head of the next run, then switches: the cost is one comparison per victim and
one heap operation per switch, not a heap push and pop of a tuple per chunk.

Entries are never updated in place: each run has a number, and a status names the run of its
latest entry (``ChunkStatus.run``); an entry counts only while its status is idle (reference
count 0) and still names that run. Every change of an idle chunk's rank adds a new entry
(`add`), a chunk that becomes idle again gets a new one too, an evicted chunk's status names no
run: so a live entry's status still has the rank it was sorted by, and the live entries are
exactly the idle chunks, in ``(rank, key)`` order. A stale entry is told without a dict lookup
and without remembering its rank: a run is only its statuses (their keys and ranks are read off
them), no parallel lists of keys and boxed ranks (offload_speed's workload compiled: 2.39 ->
2.25 s CPU with the tier, medians of 7; 0.59G fewer instructions). When
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


class _Run:
    """Statuses sorted by ``(rank, key)``; ``seq`` the run's number, ``i`` the next entry."""

    __slots__ = ("chunks", "i", "seq")

    def __init__(self, chunks: list[ChunkStatus], seq: int) -> None:
        self.chunks = chunks
        self.seq = seq
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
        self.seq = 0                      # the last run's number (runs start at 1)
        self.live_entries = 0             # entries not yet walked (live or stale)
        self.num_idle = 0

    def add(self, keys: list[bytes], cs: list[ChunkStatus] | None = None,
            newly_idle: int = 0) -> None:
        """Entries for these keys at their current ranks (``cs``: their statuses, when the
        caller has them: no dict lookup); ``newly_idle`` of them just became idle."""
        self.num_idle += newly_idle
        if not keys:
            return
        if cs is None:
            chunks = self.chunks
            cs = [chunks[k] for k in keys]
        self._push(_sorted(cs))
        # Stale entries pile up under re-ranks; rebuild when they outnumber the live ones.
        if self.live_entries > max(64, 2 * self.num_idle):
            self.rebuild()

    def _push(self, cs: list[ChunkStatus]) -> None:
        """A new run of these sorted statuses (their latest entries). (A status twice, as a
        key touched twice, sits twice side by side: the second entry dies with the first.)"""
        self.seq += 1
        seq = self.seq
        for c in cs:
            c.run = seq
        head = cs[0]
        heapq.heappush(self.heap, (head.rank, head.key, seq, _Run(cs, seq)))
        self.live_entries += len(cs)

    def rebuild(self) -> None:
        self.heap = []
        self.live_entries = 0
        cs = [c for c in self.chunks.values() if c.ref_cnt == 0]
        if cs:
            self._push(_sorted(cs))

    def take(self, n: int, protected: set[bytes], freed: list[ChunkStatus]
             ) -> list[bytes] | None:
        """Evict the ``n`` lowest idle chunks outside ``protected``: removed from ``chunks``,
        their statuses appended to ``freed`` (naming no run, key `NO_KEY`), their keys returned
        in order; or none at all (None) when there are fewer."""
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
        kept: list[ChunkStatus] = []       # protected chunks passed over, in order
        while len(taken) < n:
            _, _, seq, run = heapq.heappop(heap)
            cs, i = run.chunks, run.i
            end = len(cs)
            bounded = len(heap) > 0         # (the last run: no bound, to its end)
            lim_rank, lim_key = (heap[0][0], heap[0][1]) if bounded else (0, NO_KEY)
            start = i
            while i < end:
                chunk = cs[i]
                if chunk.run != seq or chunk.ref_cnt != 0:
                    i += 1
                    continue              # stale (re-ranked, pinned or evicted since)
                r = chunk.rank
                key = chunk.key
                if bounded and (r > lim_rank or (r == lim_rank and key > lim_key)):
                    break
                i += 1
                if protected and key in protected:
                    kept.append(chunk)
                    continue
                del chunks[key]
                chunk.run = 0
                chunk.key = NO_KEY
                taken.append(key)
                freed.append(chunk)
                if len(taken) == n:
                    break
            # the run's next live entry heads it again (its rank is a lower bound of the rest)
            while i < end and (cs[i].run != seq or cs[i].ref_cnt != 0):
                i += 1
            self.live_entries -= i - start
            run.i = i
            if i < end:
                heapq.heappush(heap, (cs[i].rank, cs[i].key, seq, run))
        self.num_idle -= n
        if kept:
            self._push(kept)        # passed over in order, so already sorted; still idle
        return taken

    def clear(self) -> None:
        self.heap = []
        self.live_entries = 0
        self.num_idle = 0


def _sorted(cs: list[ChunkStatus]) -> list[ChunkStatus]:
    """The statuses in ``(rank, key)`` order."""
    # A store job's chunks come tail first (ranks falling), a re-rank's rising: one pass tells.
    rising = falling = True
    prev = cs[0].rank
    for i in range(1, len(cs)):
        r = cs[i].rank
        if r <= prev:
            rising = False
        if r >= prev:
            falling = False
        prev = r
    if rising:
        return cs
    if falling:
        return cs[::-1]
    out = sorted(cs, key=_rank)
    for a, b in pairwise(out):
        if a.rank == b.rank:    # equal ranks (keys of several groups at one position): key bytes
            return sorted(cs, key=_rank_key)
    return out


def _rank(c: ChunkStatus) -> int:
    return c.rank


def _rank_key(c: ChunkStatus) -> tuple[int, bytes]:
    return c.rank, c.key
