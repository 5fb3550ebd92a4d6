"""`kvcli stats` analyses on small hand-built event streams; each expected number worked by hand.
(The distributions they summarise with: tests/test_stats_dist.py.)"""

from __future__ import annotations

import pytest
from stats_streams import Stream

from kvcore.analysis.stats import stats_from_events, stats_from_lines


def report(s: Stream) -> dict:
    lines = s.lines()
    return stats_from_lines("t.jsonl", lines[0], iter(lines[1:]))


# -- eviction: lifetime, idle, regret ------------------------------------------------------------

def lifetime_stream() -> Stream:
    s = Stream(block_size=4, num_blocks=5)                 # 4 usable blocks
    s.at(0).arrive("A", 8).admit("A", 8, 0, [[11, 12]])
    s.allocate("A", [1, 2]).cache("A", [1, 2], [11, 12])
    s.at(1).finish("A").free("A", [2, 1], evictable=[2, 1])
    # B needs 4 blocks: the free ones (3, 4) then the cached ones in free order (2, 1)
    s.at(5).arrive("B", 16).admit("B", 16, 0, [[21, 22, 23, 24]])
    s.evict("B", 2, 12).evict("B", 1, 11)
    s.allocate("B", [3, 4, 2, 1]).cache("B", [3, 4, 2, 1], [21, 22, 23, 24])
    s.at(6).finish("B").free("B", [1, 2, 4, 3], evictable=[1, 2, 4, 3])
    # C comes back to A's prefix (11, 12): both were evicted by B at step 5
    s.at(8).arrive("C", 9).admit("C", 9, 0, [[11, 12]])
    s.evict("C", 1, 24).evict("C", 2, 23).evict("C", 4, 22)
    s.allocate("C", [1, 2, 4]).cache("C", [1, 2], [11, 12])
    s.at(9).finish("C").free("C", [4, 2, 1], evictable=[2, 1])
    return s.end()


def test_lifetime_idle_and_regret_from_known_steps():
    r = report(lifetime_stream())
    e = r["eviction"]
    assert e["evictions"] == 5
    # blocks 2, 1: allocated at step 0, released at 1, evicted at 5 -> lifetime 5, idle 4
    # blocks 1, 2, 4: allocated at 5, released at 6, evicted at 8 -> lifetime 3, idle 2
    assert e["lifetime_steps"] == {"count": 5, "mean": 19 / 5, "min": 3, "p50": 3, "p90": 5,
                                   "p99": 5, "max": 5, "log2_bins": [[2, 4, 3], [4, 8, 2]]}
    assert e["idle_before_evict_steps"] == {"count": 5, "mean": 14 / 5, "min": 2, "p50": 2,
                                            "p90": 4, "p99": 4, "max": 4,
                                            "log2_bins": [[2, 4, 3], [4, 8, 2]]}
    assert e["age_at_evict_steps"]["max"] == 5 and e["age_at_evict_steps"]["min"] == 3
    # regret: 11 and 12, evicted at step 5, cached again at step 8: 2 blocks, 8 tokens, gap 3
    assert e["regret"] == {"evictions": 2, "fraction": 2 / 5, "recomputed_tokens": 8,
                           "gap_steps": {"count": 2, "mean": 3.0, "min": 3, "p50": 3, "p90": 3,
                                         "p99": 3, "max": 3}}
    assert e["top_evictors"] == [{"req": "C", "blocks": 3}, {"req": "B", "blocks": 2}]
    assert e["per_1000_requests"] == 5 * 1000 / 3
    assert e["per_minute"] == 5 * 60000 / 90.0            # last event at t = 90 ms
    m = r["misses"]
    # A: 2 cold blocks; B: 4 cold; C: 2 evicted (by B) and 1 token in a partial block
    assert m["tokens"] == {"cold": 24, "evicted": 8, "partial_block": 1, "last_token": 0,
                           "window": 0, "domain": 0, "in_flight": 0, "unknown": 0, "mamba_state": 0}
    assert m["blocks"]["evicted"] == 2 and m["requests"]["cold"] == 2
    assert m["by_evictor"] == [{"req": "B", "blocks": 2}]
    assert m["missed_tokens"] == r["reuse"]["prompt_tokens"] - r["reuse"]["hit_tokens"] == 33


def test_memory_usage_at_step_ends():
    r = report(lifetime_stream())["memory"]
    # step ends: 0 -> used 2 (lasts 1 step), 1 -> 0 (4 steps, to step 5), 5 -> 4 (1), 6 -> 0 (2),
    # 8 -> 3 (1), 9 -> 0 (the last step, 1)
    assert r["steps_sampled"] == 10
    assert r["peak_used_blocks"] == 4 and r["peak_usage"] == 1.0 and r["peak_step"] == 5
    u = r["used_blocks"]
    assert (u["peak"], u["p50"], u["p90"], u["p99"]) == (4, 0, 3, 4)
    assert u["mean_steps"] == (2 + 4 + 3) / 10
    # time-weighted: 2 * 10ms + 0 * 40 + 4 * 10 + 0 * 20 + 3 * 10 over 90 ms
    assert u["mean_time"] == 1.0
    # cached-and-free blocks at step ends: 0, 2 (x4), 0, 4 (x2), 1, 3
    c = r["cached_blocks"]
    assert (c["peak"], c["p50"]) == (4, 2)
    # per request at its end: A 2 blocks for 8 + 1 - 1 = 8 tokens, B 4 blocks / 16 tokens,
    # C 3 blocks (12 slots) / 9 tokens -> 3 empty slots
    assert r["kv_tokens_per_request"]["max"] == 16
    assert r["empty_slots_per_request"] == {"count": 3, "mean": 1.0, "min": 0, "p50": 0,
                                            "p90": 3, "p99": 3, "max": 3}
    assert r["empty_slots_fraction"] == 3 / 36
    # the maximum within each step (a step starts with what the previous one left)
    assert r["timeline"]["used_max"] == [2, 2, 0, 0, 0, 4, 4, 0, 3, 3]
    assert r["timeline"]["used_mean"] == [2, 0, 0, 0, 0, 4, 0, 0, 3, 0]
    assert r["timeline"]["cached_mean"] == [0, 2, 2, 2, 2, 0, 4, 4, 1, 3]


# -- miss attribution ----------------------------------------------------------------------------

def classes_stream() -> Stream:
    s = Stream(block_size=4, num_blocks=10)
    s.at(0).arrive("A", 8).admit("A", 8, 0, [[101, 102]])            # cold x2
    s.allocate("A", [1, 2]).cache("A", [1, 2], [101, 102])
    s.at(1).finish("A").free("A", [2, 1], evictable=[2, 1])
    # B: the same 8 tokens; both blocks cached but the lookup stops at 7 tokens -> hit 4
    s.at(2).arrive("B", 8).admit("B", 8, 4, [[101, 102]])            # last_token x1
    s.touch("B", [1], [101]).allocate("B", [3]).cache("B", [3], [102])
    s.at(3).finish("B").free("B", [3, 1], evictable=[3, 1])
    # C: A's content under a cache salt: other hashes, the plain ones are cached
    s.at(4).arrive("C", 10).admit("C", 10, 0, [[201, 202]], hash_domain="salt=x",
                                  content_hashes=[[101, 102]])       # domain x2 + 2 partial
    s.allocate("C", [4, 5, 6]).cache("C", [4, 5], [201, 202])
    s.at(5).finish("C").free("C", [6, 5, 4], evictable=[5, 4])
    s.at(6).arrive("D", 12).admit("D", 12, 4, [[101, 301, 302]])     # hit 1, cold x2
    s.touch("D", [1], [101]).allocate("D", [7, 8]).cache("D", [7, 8], [301, 302])
    s.at(7).finish("D").free("D", [8, 7, 1], evictable=[8, 7, 1])
    s.at(8).arrive("E", 6).admit("E", 6, 0)                          # no prompt_hashes
    s.allocate("E", [6, 9])
    s.at(9).finish("E").free("E", [9, 6])
    return s.end()


def test_every_miss_class():
    r = report(classes_stream())
    m = r["misses"]
    assert m["tokens"] == {"cold": 16, "evicted": 0, "partial_block": 4, "last_token": 4,
                           "window": 0, "domain": 8, "in_flight": 0, "unknown": 4, "mamba_state": 0}
    assert m["blocks"] == {"cold": 4, "evicted": 0, "partial_block": 0, "last_token": 1,
                           "window": 0, "domain": 2, "in_flight": 0, "unknown": 1, "mamba_state": 0}
    assert m["requests"] == {"cold": 2, "evicted": 0, "partial_block": 2, "last_token": 1,
                             "window": 0, "domain": 1, "in_flight": 0, "unknown": 1, "mamba_state": 0}
    # prompt 8 + 8 + 10 + 12 + 6 = 44 = hits 4 + 4 + misses 36
    assert m["missed_tokens"] == 36
    u = r["reuse"]
    assert (u["prompt_tokens"], u["hit_tokens"], u["requests"]) == (44, 8, 5)
    assert u["hit_rate"] == 8 / 44
    assert u["request_hit_rate_mean"] == pytest.approx((4 / 8 + 4 / 12) / 5, abs=0)
    assert u["requests_with_hit"] == 2
    # block 1 (hash 101): cached at step 0 (admission 1), touched by B at step 2 (admission 2)
    # and by D at step 6 (admission 4): ages 2 and 6, gaps 2 and 4, distances 1 and 2
    assert u["reuse_gap_steps"]["max"] == 4 and u["reuse_gap_steps"]["min"] == 2
    assert u["reuse_distance_requests"]["max"] == 2 and u["reuse_distance_requests"]["min"] == 1
    assert r["eviction"]["age_at_hit_steps"]["min"] == 2
    assert r["eviction"]["age_at_hit_steps"]["max"] == 6
    assert u["top_blocks"][0] == {"group": 0, "hash": 101, "hits": 2, "block_index": 0,
                                  "prefix_tokens": 4}
    assert u["top_prefixes"] == [{"group": 0, "hits": 2, "prefix_tokens": 4, "hash": 101}]


def test_top_prefixes_keep_the_deepest_block_of_each_hit_count():
    s = Stream(block_size=4, num_blocks=20)
    s.at(0).arrive("A", 13).admit("A", 13, 0, [[1, 2, 3]])
    s.allocate("A", [1, 2, 3, 4]).cache("A", [1, 2, 3], [1, 2, 3])
    s.at(1).finish("A").free("A", [4, 3, 2, 1], evictable=[3, 2, 1])
    # B and C share all 3 blocks (12 tokens), D only the first 2 (8 tokens)
    for k, req in enumerate("BCD"):
        n = 3 if req != "D" else 2
        s.at(2 + 2 * k).arrive(req, 13).admit(req, 13, 4 * n, [[1, 2, 3]] if n == 3 else
                                              [[1, 2, 9]])
        s.touch(req, [1, 2, 3][:n], [1, 2, 3][:n]).allocate(req, [5 + k * 2, 6 + k * 2])
        s.at(3 + 2 * k).finish(req).free(req, [6 + k * 2, 5 + k * 2, *[3, 2, 1][3 - n:]],
                                         evictable=[3, 2, 1][3 - n:])
    u = report(s.end())["reuse"]
    # hits: block 1 -> 3, block 2 -> 3, block 3 -> 2: prefixes of 8 tokens x 3, 12 tokens x 2
    assert u["top_prefixes"] == [{"group": 0, "hits": 3, "prefix_tokens": 8, "hash": 2},
                                 {"group": 0, "hits": 2, "prefix_tokens": 12, "hash": 3}]


def test_window_miss_in_a_hybrid_model():
    groups = [{"type": "full_attention", "block_size": 4},
              {"type": "sliding_window", "block_size": 4, "sliding_window": 4}]
    s = Stream(block_size=4, num_blocks=10, groups=groups)
    s.at(0).arrive("A", 12).admit("A", 12, 0, [[1, 2, 3], [1, 2, 3]])
    s.allocate("A", [1, 2, 3], 0).allocate("A", [4, 5, 6], 1)
    s.cache("A", [1, 2, 3], [1, 2, 3], 0).cache("A", [4, 5, 6], [1, 2, 3], 1)
    s.at(1).finish("A").free("A", [3, 2, 1], evictable=[3, 2, 1], group=0)
    s.free("A", [6, 5, 4], evictable=[6, 5, 4], group=1)
    # X evicts the sliding-window copies of blocks 2 and 3 of A's prompt
    s.at(2).arrive("X", 4).admit("X", 4, 0, [[9], [9]])
    s.evict("X", 6, 3, 1).evict("X", 5, 2, 1).allocate("X", [6], 0).allocate("X", [5], 1)
    s.at(3).finish("X").free("X", [6], freed=[6], group=0).free("X", [5], freed=[5], group=1)
    # B: full attention has all 3 blocks; the window group holds only the first: hit 1 block
    s.at(4).arrive("B", 13).admit("B", 13, 4, [[1, 2, 3], [1, 2, 3]])
    s.touch("B", [1], [1], 0).touch("B", [4], [1], 1)
    r = report(s.end())
    assert r["misses"]["tokens"]["window"] == 8
    assert r["misses"]["tokens"]["partial_block"] == 1
    assert r["misses"]["tokens"]["cold"] == 12 + 4           # A's 3 blocks, X's 1
    assert r["eviction"]["evictions"] == 2
    assert r["eviction"]["lifetime_steps"]["max"] == 2       # allocated at 0, evicted at 2
    assert r["eviction"]["idle_before_evict_steps"]["max"] == 1
    assert r["memory"]["peak_used_blocks"] == 6


def test_in_process_events_give_the_same_report():
    s = classes_stream()
    assert stats_from_events([s.header, *s.events]) == report(s)


def test_evicted_hashes_dict_and_sorted_arrays_agree():
    from kvcore.analysis.stats.history import EvictedHashes

    e = EvictedHashes(limit=3)
    big = 2**64 - 5                                   # above 2**63: the unsigned range matters
    for h, v in [(10, 1), (big, 2), (7, 3), (8, 4), (9, 5)]:
        e[h] = v                                     # the third insert merges into the arrays
    assert len(e.old.keys) == 3 and set(e.recent) == {8, 9}
    assert e.get_many([7, 8, big, 11]) == [3, 4, 2, None]
    assert sorted(e.pop_many([7, 9, 11])) == [3, 5]  # one from the arrays, one from the dict
    assert e.get_many([7, 9]) == [None, None] and len(e) == 3
    e[7] = 6                                         # evicted again after coming back
    e[1] = 7                                         # merge (8, 7, 1): the dead 7 is dropped
    e[2] = 8
    assert e.old.keys.tolist() == [1, 7, 8, 10, big] and e.old.dead == 0 and e.recent == {2: 8}
    assert e.get_many([7, 10, 2]) == [6, 1, 8] and len(e) == 6


@pytest.mark.parametrize("make", [lifetime_stream, classes_stream])
def test_report_is_the_same_when_the_history_spills_to_arrays(make, monkeypatch):
    from kvcore.analysis.stats.history import EvictedHashes

    expected = report(make())
    monkeypatch.setattr(EvictedHashes, "LIMIT", 1)
    assert report(make()) == expected


def test_evicted_history_filter_never_loses_an_entry():
    # many merges (the bit filter grows and is rebuilt), pops, lookups of present and absent keys
    import random

    from kvcore.analysis.stats.history import EvictedHashes

    rng = random.Random(1)
    e, ref = EvictedHashes(limit=500), {}
    keys = [rng.getrandbits(64) for _ in range(20000)]
    for i, k in enumerate(keys):
        e[k] = ref[k] = i
        if i % 997 == 0 and i > 100:
            gone = rng.sample(keys[:i + 1], 50)
            assert sorted(e.pop_many(gone)) == sorted(ref.pop(k) for k in set(gone) if k in ref)
    q = keys[::3] + [rng.getrandbits(64) for _ in range(5000)]
    assert e.get_many(q) == [ref.get(k) for k in q]
    assert len(e) == len(ref)


def test_top_prefixes_find_the_deepest_block_of_a_count_however_few_hits_it_has():
    from kvcore.analysis.stats.reuse import ReuseStats

    # 60 blocks hit 5 times (one chain of 60), then a chain of 239 blocks hit twice: the
    # deepest block with 2 hits is the 239th; it was outside the 50 x top most hit blocks, so
    # --top 1 and --top 2 said prefixes of different lengths for the same count
    r = ReuseStats(10, 1000.0)
    r.hits[0].update({h: 5 for h in range(60)})
    r.depth[0].update({h: h for h in range(60)})
    r.hits[0].update({1000 + i: 2 for i in range(239)})
    r.depth[0].update({1000 + i: 60 + i for i in range(239)})
    rows = [{"group": 0, "hits": 5, "prefix_tokens": 60 * 16, "hash": 59},
            {"group": 0, "hits": 2, "prefix_tokens": 299 * 16, "hash": 1238}]
    assert r._prefixes(2, [16]) == rows
    assert r._prefixes(1, [16]) == rows[:1]
    assert r._prefixes(10, [16]) == rows
