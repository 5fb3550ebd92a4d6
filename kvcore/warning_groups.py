"""Identical warnings said once, with the sources that said them: a sweep's jobs, a cluster's
replicas. A hundred jobs (or 1,000 replicas) saying one line make one line naming them as runs
(`index_runs`), not a hundred."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TypeVar

from kvcore.index_runs import index_runs

Source = TypeVar("Source", bound=Hashable)


def warning_groups(sources: Iterable[tuple[Source, Iterable[object]]]
                   ) -> list[tuple[str, list[Source]]]:
    """Each distinct warning (as text) of ``sources`` (a source's index, or id, and its
    warnings, in order) with the sources that said it, in order of first appearance."""
    said: dict[str, list[Source]] = {}
    for index, warnings in sources:
        for w in warnings:
            said.setdefault(str(w), []).append(index)
    return list(said.items())


def sources_named(noun: str, ids: list[int]) -> str:
    """'replica 3', 'replicas 0-127', 'jobs 0, 2, 5-7': the noun, plural for more than one."""
    return f"{noun}{'s' if len(ids) > 1 else ''} {index_runs(ids)}"
