"""Knees of a capacity curve: the smallest capacity reaching 50/90/95/99% of the ceiling."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvcore.analysis.curve.compute import CurvePoint
    from kvcore.analysis.curve.onepass import OnePass

KNEE_FRACTIONS = (0.5, 0.9, 0.95, 0.99)


def knees_of(lru: OnePass | None, points: list[CurvePoint], ceiling: float
             ) -> tuple[dict[str, int | None], dict[str, str | None]]:
    """The smallest capacity reaching each fraction of the ceiling, and how it was found:
    "one-pass" where the LRU one pass is exact there, else "points" (the smallest evaluated
    capacity that reaches it: an upper bound). A smaller fraction is reached no later than a
    larger one, so a bound from a larger fraction caps the smaller ones (the knees are
    monotone)."""
    ks: dict[str, int | None] = {}
    how: dict[str, str | None] = {}
    for f in KNEE_FRACTIONS:
        key = f"{round(f * 100)}"
        k = lru.knee(f) if lru is not None else None
        if k is not None and lru is not None and lru.is_exact(k):
            ks[key], how[key] = k, "one-pass"
        else:
            k = _knee_from_points(points, f * ceiling) if ceiling > 0 else None
            ks[key], how[key] = k, ("points" if k is not None else None)
    keys = list(ks)
    for small, large in zip(reversed(keys[:-1]), reversed(keys[1:])):
        k_large = ks[large]
        if k_large is not None and (ks[small] is None or ks[small] > k_large):
            ks[small], how[small] = k_large, how[large]
    return ks, how


def _knee_from_points(points: list[CurvePoint], target: float) -> int | None:
    for p in sorted(points, key=lambda p: p.capacity_blocks):
        if p.hit_rate is not None and p.hit_rate >= target:
            return p.capacity_blocks
    return None
