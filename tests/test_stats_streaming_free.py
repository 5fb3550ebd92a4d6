"""`StreamingStats` (`kvcli stats TRACE`, `replay --explain`) frees its collector by reference
counting as the feed goes: the collector's handlers are its own bound methods, a cycle the
cyclic collector alone would free (and a replay holds it off: `kvcore.gc_pause`)."""

from __future__ import annotations

import gc
import json
import weakref

from test_stats_analysis import lifetime_stream

from kvcore.analysis.stats import StreamingStats


def _fed(**options) -> StreamingStats:
    feed = StreamingStats(**options)
    for line in lifetime_stream().lines():
        feed(json.loads(line))
    return feed


def test_the_collector_goes_with_the_feed_after_its_report() -> None:
    gc.disable()
    try:
        feed = _fed()
        assert feed.report()["eviction"]["evictions"] == 5
        alive = weakref.ref(feed.collector)
        del feed
        assert alive() is None
    finally:
        gc.enable()


def test_the_collector_goes_with_the_feed_after_watched_alone() -> None:
    """`replay --explain` asks only for one request's reasons; they come whole after the
    release, which keeps the sections (C missed 2 evicted blocks of 4 tokens and 1 token in a
    partial block)."""
    gc.disable()
    try:
        feed = _fed(watch="C")
        watched = feed.watched()
        assert [w["missed"] for w in watched] == [{"evicted": 8, "partial_block": 1}]
        alive = weakref.ref(feed.collector)
        del feed
        assert alive() is None
    finally:
        gc.enable()


def test_the_cyclic_collector_finds_nothing_of_it() -> None:
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        feed = _fed()
        feed.report()
        del feed
        gc.collect()
        assert not [o for o in gc.garbage if type(o).__module__.startswith("kvcore.analysis")]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
