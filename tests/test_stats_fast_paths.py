"""The vectorized stats paths against their references: the block handlers (block_events.py)
against the per-block ones (per_block.py), the miss reasons (attribution.py) against the
per-block loop, `BulkDist` against `Dist`, the evicted-hash filter against a dict."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from stats_streams import Stream
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.analysis.stats import stats_from_lines
from kvcore.analysis.stats.attribution import block_reasons, reasons_per_block
from kvcore.analysis.stats.bulk import BulkDist
from kvcore.analysis.stats.collector import StatsCollector
from kvcore.analysis.stats.dist import Dist
from kvcore.analysis.stats.history import EvictedHashes
from kvcore.analysis.stats.misses import MissStats
from kvcore.errors import InputError


def both(s: Stream) -> tuple[dict, dict]:
    lines = s.lines()
    fast = stats_from_lines("t.jsonl", lines[0], iter(lines[1:]))
    ref = stats_from_lines("t.jsonl", lines[0], iter(lines[1:]), per_block=True)
    return fast, ref


def shared_hash_stream() -> Stream:
    """Multi-block events where one hash sits on several blocks, evictions of blocks in use,
    regret (evicted hashes cached again) and a touch of blocks held by several requests."""
    s = Stream(block_size=4, num_blocks=12)
    s.at(0).arrive("A", 12).admit("A", 12, 0, [[1, 2, 3]])
    s.allocate("A", [1, 2, 3]).cache("A", [1, 2, 3], [1, 2, 3])
    s.arrive("B", 12).admit("B", 12, 0, [[1, 2, 3]])
    # B computes the same blocks: each hash now on two blocks, one of them twice in one event
    s.allocate("B", [4, 5, 6]).cache("B", [4, 5, 6], [1, 2, 2])
    s.at(1).finish("A").free("A", [3, 2, 1], evictable=[3, 2, 1])
    s.at(2).arrive("C", 8).admit("C", 8, 8, [[1, 2]]).touch("C", [1, 2], [1, 2])
    # evict blocks still in use (C holds 1, 2; B holds 5, 6) with shared and single hashes
    s.evict("X", 5, 2).add("evict", "X", 0, blocks=[1, 3, 6], hashes=[1, 3, 2])
    s.at(3).finish("B").free("B", [6, 5, 4], freed=[4], evictable=[4])
    s.finish("C").free("C", [2, 1], evictable=[2])
    s.at(4).add("evict", "Y", 0, blocks=[2, 4], hashes=[2, 1])
    # regret: 1, 2, 3 come back (multi-block and single cache events)
    s.at(6).arrive("D", 12).admit("D", 12, 0, [[1, 2, 3]]).allocate("D", [7, 8, 9])
    s.cache("D", [7, 8], [1, 2]).cache("D", [9], [3])
    s.at(7).finish("D").free("D", [9, 8, 7], evictable=[9, 8, 7])
    return s.end()


def in_flight_stream() -> Stream:
    """A running request caches the first missed block of a later admission (in_flight)."""
    s = Stream(block_size=4, num_blocks=10)
    s.at(0).arrive("A", 12).admit("A", 12, 0, [[1, 2, 3]]).allocate("A", [1, 2, 3])
    s.cache("A", [1], [1])
    s.at(1).arrive("B", 12).admit("B", 12, 4, [[1, 2, 3]]).touch("B", [1], [1])
    s.allocate("B", [4, 5]).cache("A", [2, 3], [2, 3]).cache("B", [4, 5], [2, 3])
    s.at(2).finish("A").free("A", [3, 2, 1], freed=[3, 2], evictable=[3, 2])
    s.finish("B").free("B", [5, 4, 1], evictable=[5, 4, 1])
    return s.end()


@pytest.mark.parametrize("make", [shared_hash_stream, in_flight_stream])
def test_vectorized_block_handlers_match_the_per_block_ones(make, monkeypatch):
    fast, ref = both(make())
    assert fast == ref
    assert fast["eviction"]["evicted_while_referenced"] > 0 or make is in_flight_stream
    monkeypatch.setattr(EvictedHashes, "LIMIT", 1)           # the history in its arrays
    assert both(make()) == (fast, fast)


def test_shared_hash_stream_counts():
    r, _ = both(shared_hash_stream())
    e = r["eviction"]
    # X: 5 (B, in use), 1 (C, in use), 3 (free), 6 (B, in use); Y: 2 (C's, free), 4 (free)
    assert e["evictions"] == 6 and e["evicted_while_referenced"] == 3
    assert e["regret"]["evictions"] == 3           # 1, 2, 3 were all evicted, then cached
    # B: cached (by A) but not hit, 3 blocks; D: all three blocks in the history
    assert r["misses"]["tokens"]["evicted"] == 24


def test_in_flight_is_found_by_both_paths():
    r, _ = both(in_flight_stream())
    assert r["misses"]["blocks"]["in_flight"] == 1


@pytest.mark.parametrize("bad, message", [
    ({"kind": "allocate", "blocks": [7, 7]}, "block 7 allocated while in use"),
    ({"kind": "allocate", "blocks": [3, 99]}, "'blocks' holds 99, not a block id (0..9)"),
    ({"kind": "evict", "blocks": [1, 1], "hashes": [11, 11]},
     "evict of block 1 with hash 11, which it does not hold"),
    ({"kind": "evict", "blocks": [1, 2], "hashes": [11, 13]}, "with hash 13"),
    ({"kind": "free", "blocks": [1], "freed": [1, 2]}, "block 2 listed in 'freed'"),
    ({"kind": "cache", "blocks": [3, 99], "hashes": [5, 6]}, "'blocks' holds 99, not a"),
    ({"kind": "touch", "blocks": ["x"], "hashes": [5]}, "'blocks' holds \"x\", not a"),
    # what a list index takes but is no block id: JSON true (block 1), -1 (the last block)
    ({"kind": "touch", "blocks": [True], "hashes": [11]}, "'blocks' holds true, not a"),
    ({"kind": "touch", "blocks": [1, True], "hashes": [11, 11]}, "holds true, not"),
    ({"kind": "allocate", "blocks": [-1]}, "'blocks' holds -1, not a block id (0..9)"),
    ({"kind": "allocate", "blocks": [3, -1]}, "'blocks' holds -1, not a block id"),
    ({"kind": "allocate", "blocks": [False]}, "'blocks' holds false, not a"),
    ({"kind": "cache", "blocks": [-8], "hashes": [5]}, "'blocks' holds -8, not a"),
    ({"kind": "cache", "blocks": [3, 1.0], "hashes": [5, 6]}, "'blocks' holds 1.0, not a"),
    ({"kind": "evict", "blocks": [-9], "hashes": [11]}, "'blocks' holds -9, not a"),
    ({"kind": "evict", "blocks": [99], "hashes": [11]}, "'blocks' holds 99, not a"),
    ({"kind": "evict", "blocks": [True, 2], "hashes": [11, 12]}, "'blocks' holds true"),
    ({"kind": "free", "blocks": [-10], "freed": []}, "'blocks' holds -10, not a"),
    ({"kind": "free", "blocks": [1, 2], "freed": [True]}, "'freed' holds true, not a"),
])
def test_bad_block_events_give_the_per_block_error(bad, message, tmp_path):
    s = Stream(block_size=4, num_blocks=10)
    s.at(0).arrive("A", 8).admit("A", 8, 0, [[11, 12]]).allocate("A", [1, 2])
    s.cache("A", [1, 2], [11, 12])
    kind = bad.pop("kind")
    s.add(kind, "A", 0, **bad).end()
    p = tmp_path / "bad.jsonl"
    res = CliRunner().invoke(app, ["stats", s.write(p)])
    assert res.exit_code == 2
    # (a value that is no block id names its field; an impossible sequence of events no field)
    field = "freed" if "'freed' holds" in message else "blocks" if "holds " in message else None
    named = "" if field is None else f"field '{field}': "
    assert f"bad.jsonl:6: {named}bad '{kind}' event: " in res.stderr and message in res.stderr
    lines = s.lines()                       # the per-block reference says the same
    with pytest.raises(InputError) as err:
        stats_from_lines("t.jsonl", lines[0], iter(lines[1:]), per_block=True)
    assert message in str(err.value)


def test_vectorized_miss_reasons_match_the_per_block_loop():
    rng = random.Random(3)
    for trial in range(300):
        pool = list(range(1, 60))
        cached = [set(rng.sample(pool, 20)), set(rng.sample(pool, 25))]
        evicted = [EvictedHashes(limit=8), EvictedHashes(limit=8)]
        for g in (0, 1):
            for h in rng.sample([h for h in pool if h not in cached[g]], 15):
                evicted[g][h] = rng.randrange(1 << 40)
        ms = MissStats(cached, evicted, 0, 4, ["full_attention", ("full_attention",
                                                                  "sliding_window", "mamba")[trial % 3]])
        ms.domain_content[0].update(rng.sample(pool, 5))
        n = rng.randrange(0, 12)
        hashes = [rng.choice(pool) for _ in range(n)]
        ev = {"prompt_hashes": [hashes, [rng.choice(pool) for _ in range(rng.randrange(n + 1))]]}
        if trial % 3 == 0:
            ev["hash_domain"] = "lora=x"
            if trial % 2:
                ev["content_hashes"] = [[rng.choice(pool) for _ in range(n)], None]
        hit = rng.randrange(0, n + 1)
        tail = rng.choice([0, 0, 3])
        seen = (np.array([rng.choice([-1, h & 7, 99]) for h in hashes[hit:]], dtype=np.int64)
                if trial % 4 else None)
        codes, evictors = block_reasons(ms, ev, hashes, hit, tail, seen)
        ref_codes, ref_evictors = reasons_per_block(ms, ev, hashes, hit, tail, seen)
        assert codes.tolist() == ref_codes and evictors == ref_evictors, trial


def test_bulk_dist_counts_as_a_dist(monkeypatch):
    monkeypatch.setattr(BulkDist, "FLUSH", 5)                # flush often
    rng = random.Random(5)
    bulk, ref = BulkDist(), Dist()
    for _ in range(200):
        vals = [rng.randrange(-3, 40) for _ in range(rng.randrange(1, 6))]
        if len(vals) == 1:
            bulk.add(vals[0])
        else:
            bulk.add_array(np.array(vals, dtype=np.int64))
        for v in vals:
            ref.add(v)
    bulk.add(7, 3)
    ref.add(7, 3)
    assert bulk.counts == ref.counts and bulk.summary() == ref.summary()
    assert bulk.log2_bins() == Dist.log2_bins(bulk) and len(bulk) == len(ref)
    assert all(type(k) is int and type(c) is int for k, c in bulk.counts.items())


def test_evicted_history_filter_and_pops_agree_with_a_dict():
    rng = random.Random(9)
    e, ref = EvictedHashes(limit=64), {}
    keys = [rng.getrandbits(64) for _ in range(3000)] + [0, 2**64 - 1]
    for i in range(4000):
        k = rng.choice(keys)
        op = rng.random()
        if op < 0.4 and k not in ref:       # as the collector: a hash comes back before it
            e.put_many([k], [i])             # is evicted again (else the arrays' copy stays)
            ref[k] = i
        elif op < 0.6:
            assert e.pop_one(k) == ref.pop(k, None)
        elif op < 0.8:
            ks = list(dict.fromkeys(rng.sample(keys, 20)))
            assert sorted(e.pop_many(ks)) == sorted(ref.pop(h) for h in ks if h in ref)
        else:
            ks = rng.sample(keys, 30)
            assert e.get_array(ks).tolist() == [ref.get(h, -1) for h in ks]
        if e.full():
            e.merge()
    assert e.get_many(keys) == [ref.get(k) for k in keys] and len(e) == len(ref)


def test_collector_per_block_option_uses_the_reference_handlers():
    c = StatsCollector({"block_size": 4, "num_blocks": 4}, per_block=True)
    assert c.handlers["evict"] == c._evict_each
    assert Counter(type(v).__name__ for v in (c.ref, c.bhash)) == {"ndarray": 1, "list": 1}


@pytest.mark.parametrize("per_block", [False, True])
def test_a_finished_stream_frees_its_collector_without_the_cyclic_collector(per_block,
                                                                             monkeypatch):
    # (the handlers' bound methods made a cycle: `kvcli stats DIR` held every replica's
    # collector, its 16 MiB filters included, until a full collection: ~680 MB at 1,000)
    import gc
    import weakref

    made = []
    real = StatsCollector.finish

    def finish(self):
        made.append(weakref.ref(self))
        real(self)

    monkeypatch.setattr(StatsCollector, "finish", finish)
    lines = shared_hash_stream().lines()
    was = gc.isenabled()
    gc.disable()
    try:
        r = stats_from_lines("t.jsonl", lines[0], iter(lines[1:]), per_block=per_block)
        assert len(made) == 1 and made[0]() is None
    finally:
        if was:
            gc.enable()
    assert r["eviction"]["evictions"] == 6
