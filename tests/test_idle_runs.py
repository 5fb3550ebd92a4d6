"""`IdleRuns` (the LRU tier's eviction order) against a plain sort: after any sequence of chunks
becoming idle, re-ranked (equal ranks included), pinned and taken, `take(n, protected)` evicts
exactly the ``n`` lowest ``(rank, key)`` idle chunks outside ``protected``, in that order, or
nothing when there are fewer."""

from __future__ import annotations

import random

import pytest

from kvcore.offload.idle_runs import IdleRuns
from kvcore.offload.keys import ChunkStatus


def _expected(chunks: dict[bytes, ChunkStatus], n: int, protected: set[bytes]) -> list[bytes]:
    idle = [k for k, c in chunks.items() if c.ref_cnt == 0 and k not in protected]
    return sorted(idle, key=lambda k: (chunks[k].rank, k))[:n]


@pytest.mark.parametrize("seed", range(40))
def test_take_is_the_sorted_order(seed: int) -> None:
    rng = random.Random(seed)
    keys = [bytes([rng.randrange(256), i % 256, i // 256]) for i in range(rng.choice([5, 40, 300]))]
    chunks: dict[bytes, ChunkStatus] = {}
    runs = IdleRuns(chunks)
    counter = 0
    for _ in range(400):
        op = rng.random()
        if op < 0.35:                               # a batch becomes idle (or is re-ranked)
            batch = rng.sample(keys, rng.randrange(1, min(len(keys), 30) + 1))
            fresh = rng.random() < 0.5
            newly = 0
            for k in batch:
                c = chunks.setdefault(k, ChunkStatus(len(chunks)))
                if c.ref_cnt != 0:
                    newly += 1
                c.ref_cnt = 0
                if fresh:                           # increasing, as a finish re-rank
                    counter += 1
                    c.rank = counter
                else:                               # arbitrary, ties on purpose
                    c.rank = rng.randrange(0, max(counter, 8))
            runs.add(batch, in_order=fresh, newly_idle=newly)
        elif op < 0.5:                              # pinned (leaves stale entries)
            idle = sorted(k for k, c in chunks.items() if c.ref_cnt == 0)
            for k in rng.sample(idle, min(len(idle), rng.randrange(1, 5))):
                chunks[k].ref_cnt = 1
                runs.num_idle -= 1
        else:
            protected = set(rng.sample(keys, rng.randrange(0, min(len(keys), 10) + 1)))
            n = rng.randrange(1, 12)
            want = _expected(chunks, n, protected)
            before = dict(chunks)
            got = runs.take(n, protected)
            if len(want) < n:
                assert got is None and chunks == before
                continue
            assert got is not None
            assert [k for k, _ in got] == want
            assert all(k not in chunks for k in want)


def test_equal_ranks_go_by_key_bytes_and_protected_keys_stay() -> None:
    chunks = {}
    for i, (k, r) in enumerate([(b"b", 5), (b"a", 5), (b"c", 1), (b"d", 7)]):
        chunks[k] = ChunkStatus(i)
        chunks[k].ref_cnt, chunks[k].rank = 0, r
    runs = IdleRuns(chunks)
    runs.add([b"d", b"b"], newly_idle=2)
    runs.add([b"a", b"c"], newly_idle=2)
    assert runs.take(3, {b"c", b"a"}) is None       # only 2 outside the protected ones
    assert [k for k, _ in runs.take(2, {b"c"})] == [b"a", b"b"]
    assert [k for k, _ in runs.take(2, set())] == [b"c", b"d"]
    assert not chunks
