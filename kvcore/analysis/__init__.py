"""Analyses over replays: `kvcli stats` (stats*.py, events_reader.py, plots.py)."""
