"""Analyses over replays: `stats` (`kvcli stats`: what the cache did, from a replay's event
stream, read by `events_reader.py`), `curve` (`kvcli curve`: hit rate against capacity) and the
eviction `policies` the curve compares."""
