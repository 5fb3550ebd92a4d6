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
    freed: list[tuple[ChunkStatus, int]] = []     # evicted statuses (and their last rank)
    for _ in range(400):
        op = rng.random()
        if op < 0.35:                               # a batch becomes idle (or is re-ranked)
            batch = rng.sample(keys, rng.randrange(1, min(len(keys), 30) + 1))
            if rng.random() < 0.2:                  # a key named twice (a touch may): its last
                batch.insert(rng.randrange(len(batch) + 1), rng.choice(batch))   # rank counts
            fresh = rng.random() < 0.5
            newly = 0
            for k in batch:
                c = chunks.get(k)
                reused = None
                if c is None:
                    if freed and rng.random() < 0.5:    # a freed slot's status, as the manager
                        c, reused = freed.pop()
                        c.ref_cnt = -1
                    else:
                        c = ChunkStatus(len(chunks))
                    c.key = k                   # (the manager keeps a resident status's key)
                    chunks[k] = c
                if c.ref_cnt != 0:
                    newly += 1
                c.ref_cnt = 0
                if fresh:                           # increasing, as a finish re-rank
                    counter += 1
                    c.rank = counter
                elif reused is not None and rng.random() < 0.5:
                    c.rank = reused                 # the rank its stale entries hold
                else:                               # arbitrary, ties on purpose
                    c.rank = rng.randrange(0, max(counter, 8))
            runs.add(batch, newly_idle=newly)
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
            ranks = {k: c.rank for k, c in chunks.items()}
            out: list[ChunkStatus] = []
            got = runs.take(n, protected, out)
            if len(want) < n:
                assert got is None and chunks == before and not out
                continue
            assert got == want
            assert [before[k] for k in want] == out
            assert all(k not in chunks for k in want)
            freed.extend((c, ranks[k]) for k, c in zip(got, out))


def test_equal_ranks_go_by_key_bytes_and_protected_keys_stay() -> None:
    chunks = {}
    for i, (k, r) in enumerate([(b"b", 5), (b"a", 5), (b"c", 1), (b"d", 7)]):
        chunks[k] = ChunkStatus(i, k)
        chunks[k].ref_cnt, chunks[k].rank = 0, r
    runs = IdleRuns(chunks)
    runs.add([b"d", b"b"], newly_idle=2)
    runs.add([b"a", b"c"], newly_idle=2)
    assert runs.take(3, {b"c", b"a"}, []) is None       # only 2 outside the protected ones
    assert runs.take(2, {b"c"}, []) == [b"a", b"b"]
    assert runs.take(2, set(), []) == [b"c", b"d"]
    assert not chunks


def test_a_reused_status_under_another_key_at_the_same_rank_is_not_its_old_key():
    """Two groups' keys of one request at one position share a rank: after ``a`` is evicted its
    status may serve ``b`` at that very rank, while a duplicate entry of ``a`` is still queued."""
    c = ChunkStatus(0, b"a")
    c.ref_cnt, c.rank = 0, 5
    chunks = {b"a": c}
    runs = IdleRuns(chunks)
    runs.add([b"a"], newly_idle=1)
    runs.add([b"a"])                     # a second entry (idle again at the same rank)
    assert runs.take(1, set(), []) == [b"a"]
    c.ref_cnt, c.rank, c.key = 0, 5, b"b"   # the freed status reused for b, same rank
    chunks[b"b"] = c
    d = ChunkStatus(1, b"c")
    d.ref_cnt, d.rank = 0, 7
    chunks[b"c"] = d
    runs.add([b"b", b"c"], newly_idle=2)
    assert runs.take(2, set(), []) == [b"b", b"c"]
