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
    "one-pass" where the LRU one pass is exact there (and no smaller evaluated capacity reaches
    it); else an upper bound, "points" (the smallest evaluated capacity that reaches it) or
    "bound" (no evaluated point: where the one pass's exact range starts, when it reaches the
    fraction there, or a larger fraction's knee, which bounds a smaller one's: the knees are
    monotone). (A larger fraction's exact knee capping a smaller one was labelled "one-pass":
    the 50% knee of the multiturn sample with --capacities 10,20 said 2,944 blocks, exact,
    where 305 reach it.)"""
    ks: dict[str, int | None] = {}
    how: dict[str, str | None] = {}
    for f in KNEE_FRACTIONS:
        key = f"{round(f * 100)}"
        k = lru.knee(f) if lru is not None else None
        seen = _knee_from_points(points, f * ceiling) if ceiling > 0 else None
        # (below the exact range a replay may reach the fraction sooner: a request too large
        # for the pool is rejected there and no longer pushes the others out, so the hits need
        # not grow with the capacity; the exact knee is then the smallest only in its range)
        if k is not None and lru is not None and lru.is_exact(k) and (seen is None or seen >= k):
            ks[key], how[key] = k, "one-pass"
            continue
        k = seen
        ks[key], how[key] = k, ("points" if k is not None else None)
        # (exact where its range starts, and reaching the fraction there: a capacity that
        # reaches it, so a bound)
        if lru is not None and lru.is_exact(start := lru.exact_min) \
                and lru.hit_tokens(start) >= f * lru.ceiling_tokens and (k is None or start < k):
            ks[key], how[key] = start, "bound"
    keys = list(ks)
    for small, large in zip(reversed(keys[:-1]), reversed(keys[1:])):
        k_large, k_small = ks[large], ks[small]
        if k_large is not None and (k_small is None or k_small > k_large):
            ks[small], how[small] = k_large, ("points" if how[large] == "points" else "bound")
    return ks, how


def _knee_from_points(points: list[CurvePoint], target: float) -> int | None:
    for p in sorted(points, key=lambda p: p.capacity_blocks):
        if p.hit_rate is not None and p.hit_rate >= target:
            return p.capacity_blocks
    return None
