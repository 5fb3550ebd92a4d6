"""`IdleRuns` (the LRU tier's eviction order) against a plain sort: after any sequence of keys
becoming idle, re-ranked (equal ranks included), pinned and taken, `take(n, protected)` returns
exactly the ``n`` lowest ``(rank, key)`` idle keys outside ``protected``, in that order."""

from __future__ import annotations

import random

import pytest

from kvcore.offload.idle_runs import IdleRuns


def _expected(ranks: dict[bytes, int], idle: set[bytes], n: int, protected: set[bytes]
              ) -> list[bytes]:
    return sorted((k for k in idle if k not in protected), key=lambda k: (ranks[k], k))[:n]


@pytest.mark.parametrize("seed", range(40))
def test_take_is_the_sorted_order(seed: int) -> None:
    rng = random.Random(seed)
    keys = [bytes([rng.randrange(256), i % 256, i // 256]) for i in range(rng.choice([5, 40, 300]))]
    ranks: dict[bytes, int] = {}
    idle: set[bytes] = set()
    runs = IdleRuns(ranks, idle)
    counter = 0
    for _ in range(400):
        op = rng.random()
        if op < 0.35:                               # a batch becomes idle (or is re-ranked)
            batch = rng.sample(keys, rng.randrange(1, min(len(keys), 30) + 1))
            fresh = rng.random() < 0.5
            for k in batch:
                if fresh:                           # increasing, as a finish re-rank
                    counter += 1
                    ranks[k] = counter
                else:                               # arbitrary, ties on purpose
                    ranks[k] = rng.randrange(0, max(counter, 8))
            idle.update(batch)
            runs.add(batch, in_order=fresh)
        elif op < 0.5 and idle:                     # pinned (leaves stale entries)
            for k in rng.sample(sorted(idle), rng.randrange(1, min(len(idle), 5) + 1)):
                idle.discard(k)
        elif idle:
            protected = set(rng.sample(keys, rng.randrange(0, min(len(keys), 10) + 1)))
            avail = len(idle - protected)
            if avail == 0:
                continue
            n = rng.randrange(1, avail + 1)
            want = _expected(ranks, idle, n, protected)
            got = runs.take(n, protected)
            assert got == want
            assert not idle & set(got)
            for k in got:
                del ranks[k]


def test_equal_ranks_go_by_key_bytes_and_protected_keys_stay() -> None:
    ranks = {b"b": 5, b"a": 5, b"c": 1, b"d": 7}
    idle = set(ranks)
    runs = IdleRuns(ranks, idle)
    runs.add([b"d", b"b"])
    runs.add([b"a", b"c"])
    assert runs.take(2, {b"c"}) == [b"a", b"b"]
    assert runs.take(2, set()) == [b"c", b"d"]
    assert not idle
