"""`kvcore.analysis.stats.dist`, the summaries `kvcli stats` reports its distributions with:
nearest-rank percentiles, `Dist`'s summary and log2 bins, `Series`' buckets over steps; each
expected number worked by hand."""

from __future__ import annotations

from kvcore.analysis.stats.dist import Dist, Series, nearest_rank, percentiles_of_counts


def test_nearest_rank_percentiles():
    # rank = ceil(p * N / 100): N=4 -> p50 rank 2, p90 rank 4 (ceil 3.6), p99 rank 4
    assert percentiles_of_counts({1: 1, 2: 1, 3: 1, 4: 1}) == {"p50": 2, "p90": 4, "p99": 4}
    # the classic example 15, 20, 35, 40, 50: p30 -> rank 2 -> 20, p40 -> 20, p50 -> 35, p100 -> 50
    c = {15: 1, 20: 1, 35: 1, 40: 1, 50: 1}
    assert percentiles_of_counts(c, (30, 40, 50, 100)) == {"p30": 20, "p40": 20, "p50": 35,
                                                           "p100": 50}
    # a histogram counts: 98 zeros and two 7s -> p50 0, p90 0, p99 (rank 99) 7
    assert percentiles_of_counts({0: 98, 7: 2}) == {"p50": 0, "p90": 0, "p99": 7}
    assert nearest_rank(50, 1) == 1 and nearest_rank(1, 1000) == 10 and nearest_rank(99, 101) == 100
    d = Dist()
    for v in (3, 1, 2, 2):
        d.add(v)
    assert d.summary() == {"count": 4, "mean": 2.0, "min": 1, "p50": 2, "p90": 3, "p99": 3,
                           "max": 3}
    assert Dist().summary()["p50"] is None


def test_series_doubles_bucket_width_and_keeps_sums_and_maxima():
    s = Series({"m": "max", "n": "sum"}, n=4)
    for step, v in [(0, 5), (1, 1), (3, 2), (4, 9), (9, 1)]:
        s.add("m", step, v)
        s.add("n", step, v)
    # step 4 forces width 2: buckets [0-1],[2-3],[4-5],[6-7]; step 9 forces width 4
    assert s.width == 4
    assert s.to_json() == {"bucket_steps": 4, "buckets": 3, "m": [5, 9, 1], "n": [8, 9, 1]}


def test_series_sum_ranges_and_bucket_means():
    s = Series({"u": "sum"}, n=4)
    s.add_sum_range("u", 0, 3, 2)      # steps 0-2 hold 2
    s.add_sum_range("u", 3, 6, 5)      # steps 3-5 hold 5: width becomes 2
    assert s.width == 2 and s.data["u"] == [4, 7, 10, 0]
    assert s.bucket_mean("u") == [2.0, 3.5, 5.0]


def test_log2_bins():
    d = Dist()
    for v in (0, 1, 2, 3, 4, 7, 8, 100):
        d.add(v)
    assert d.log2_bins() == [[0, 1, 1], [1, 2, 1], [2, 4, 2], [4, 8, 2], [8, 16, 1],
                             [64, 128, 1]]
