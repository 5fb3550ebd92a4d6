"""Indices written as runs: ``[0, 1, 2, 5, 7, 8]`` -> ``"0-2, 5, 7-8"``, for messages that
name many replicas or sweep jobs at once (one line where there were a hundred)."""

from __future__ import annotations


def index_runs(ids: list[int]) -> str:
    """Sorted, distinct ``ids`` as comma-separated runs of consecutive ones."""
    runs: list[list[int]] = []
    for i in ids:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
