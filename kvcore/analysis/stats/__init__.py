"""`kvcli stats`: memory usage, eviction churn, prefix reuse, miss attribution and preemption of
a replay, from its event stream (a file written by `kvcli replay --events`, or the events of a
replay run in-process).

    from kvcore.analysis.stats import stats_from_lines, StreamingStats
    report = stats_from_lines(name, header_line, lines)   # an event stream, header read already
    feed = StreamingStats(); replay(..., CallbackEvents(feed), ...); report = feed.report()

The modules: `collector.py` (the state machine over the events), `block_events.py` (the block
events, vectorized: the ref-count ones; `key_events.py` those that register and drop keys,
`block_ids.py` the checks that an event is the plain case; `entry_checks.py` the types and
ranges of the values the events bring in, checked as they enter) and `per_block.py` (the same one
block at a time: the reference),
`native_events.py` (the same through the optional native kernel, `native.pyx` with
`native_map.pxi` and `native_admit.pxi`, built by `compiled/build.py`), one per
section (`memory.py`, `eviction.py`, `reuse.py`, `misses.py` with `attribution.py` (miss
reasons, vectorized), `blockkeys.py` (partial-block keys), `hash_units.py` (a coarser reference
group read at the hash block), `coarse_reasons.py` (the reasons of groups of several block
sizes settled at the block and the lcm) and `watched.py` (one request's reasons, for
`replay --explain`), `preemption.py`, `cpu_tier.py`
(a replay with a CPU tier) with `cpu_window.py` (its lookup over a hybrid model's groups, for the
`cpu_window` reason)), `requests.py`
(per-request scalars), `history.py` and `sorted_arrays.py` (compact evicted-hash history),
`latency.py` (the requests' latencies, from `finish` events), `dist.py` (distributions and
timelines), `bulk.py` (distributions counted in bulk) and `report.py` (the JSON document,
docs/stats.md).
"""

from __future__ import annotations

import weakref

from kvcore.analysis.events_reader import parse_header, read_stream
from kvcore.analysis.stats.collector import StatsCollector


def stats_from_lines(name: str, header_line: bytes, lines, **options) -> dict:
    """The report of an event stream whose first line has been read already."""
    collector = StatsCollector(parse_header(header_line, name), name=name, **options)
    try:
        read_stream(name, lines, collector)
        collector.finish()
        return collector.report()
    finally:
        collector.release()     # (freed here: `kvcli stats DIR` reads one stream after another)


class StreamingStats:
    """A callable that takes events one by one (the header first), e.g. from a replay's
    `CallbackEvents`; `report()` at the end."""

    def __init__(self, **options) -> None:
        self.options = options
        self.collector: StatsCollector | None = None

    def __call__(self, ev: dict) -> None:
        if self.collector is None:
            self.collector = StatsCollector(ev, **self.options)
            # The collector refers to itself (its handlers are its bound methods): released as
            # the feed goes, it is freed by reference counting with it, not at the cyclic
            # collector's next pass, which a replay holds off (`kvcore.gc_pause`). (Not at
            # report(): `watched()` and a report may come in either order.)
            weakref.finalize(self, self.collector.release)
        else:
            self.collector.feed(ev)

    def watched(self) -> list[dict]:
        """The miss reasons of the request given as ``watch`` (`watched.WatchedMisses`)."""
        c = self.collector
        assert c is not None and c.miss.watch is not None, "no header, or no watch"
        return c.miss.watch.to_json(c.reqs.name)

    def report(self) -> dict:
        assert self.collector is not None, "no header yet"
        self.collector.finish()
        return self.collector.report()


def stats_from_events(events, **options) -> dict:
    """The report of an in-process event iterable (the header first), e.g. a replay's events."""
    feed = StreamingStats(**options)
    for ev in events:
        feed(ev)
    return feed.report()


__all__ = ["StatsCollector", "StreamingStats", "stats_from_events", "stats_from_lines"]
