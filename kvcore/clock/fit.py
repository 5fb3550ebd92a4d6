"""Fitting the roofline's efficiency factors and floors to measured kernel times.

A kernel class (GEMMs, attention, elementwise) is timed by the roofline as

    t = max(floor, F / (eta_c x peak), B / (eta_m x bandwidth))

with the peak and bandwidth the calibration's measured ceilings. Each measurement (F, B, t)
inverts to c = F / (peak t) and m = B / (bandwidth t): the binding term gives the true factor,
the others a value below it. So the fit starts from max(c), max(m), min(t) (exact on data the
roofline made), then alternates: assign each point to the term that binds under the current
factors, and set each term to the geometric mean of its points' inverted values (the least
squares of log t, a relative error, for that assignment), until the assignment holds. A term
no point binds keeps its lower bound (the factor) or 0 (the floor: "below every point"):
`Fitted.bound` counts the points each term binds, so a caller can tell a fitted factor from
such a bound.
Factors are not clamped to 1: a kernel can beat the measured copy (L2 reuse, kernels/README.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Point:
    flops: float
    bytes: float
    us: float


@dataclass(frozen=True, slots=True)
class Fitted:
    compute: float      # eta_c (1.0 when no point has FLOPs)
    memory: float       # eta_m
    floor_us: float
    # points each term binds under the fitted factors (floor, compute, memory): a factor no
    # point binds is only the lower bound the fit started from (`fit_tables` says so)
    bound: tuple[int, int, int] = (0, 0, 0)


def predict(p: Point, f: Fitted, peak: float, bw: float) -> float:
    """The roofline's time of ``p`` in us; ``peak`` FLOP/us, ``bw`` bytes/us."""
    c = p.flops / (f.compute * peak) if p.flops else 0.0
    return max(f.floor_us, c, p.bytes / (f.memory * bw))


def _binds(p: Point, f: Fitted, peak: float, bw: float) -> int:
    terms = (f.floor_us, p.flops / (f.compute * peak) if p.flops else 0.0,
             p.bytes / (f.memory * bw))
    return max(range(3), key=lambda i: (terms[i], i))    # ties go to compute, then memory


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def fit(points: Sequence[Point], peak: float, bw: float, *, max_rounds: int = 100) -> Fitted:
    if not points:
        raise ValueError("nothing to fit")
    cs = [p.flops / (peak * p.us) for p in points if p.flops]
    ms = [p.bytes / (bw * p.us) for p in points]
    f = Fitted(max(cs) if cs else 1.0, max(ms), min(p.us for p in points))
    # The floor binds a point only if it is above both other terms: with the starting factors
    # (the largest consistent with the data) a point the floor does not explain is not floor.
    assign = None
    for _ in range(max_rounds):
        new = [_binds(p, f, peak, bw) for p in points]
        if new == assign:
            break
        assign = new
        floors = [p.us for p, a in zip(points, assign) if a == 0]
        comp = [p.flops / (peak * p.us) for p, a in zip(points, assign) if a == 1]
        mem = [p.bytes / (bw * p.us) for p, a in zip(points, assign) if a == 2]
        f = Fitted(_geomean(comp) if comp else f.compute,
                   _geomean(mem) if mem else f.memory,
                   _geomean(floors) if floors else 0.0)
    final = [_binds(p, f, peak, bw) for p in points]
    return Fitted(f.compute, f.memory, f.floor_us, (final.count(0), final.count(1),
                                                    final.count(2)))


def loo_mape(points: Sequence[Point], peak: float, bw: float,
             which: Sequence[int] | None = None) -> float | None:
    """Leave-one-out mean absolute percentage error over the points at ``which`` (default all):
    each is predicted by a fit on all the other points. None with fewer than 3 points."""
    idx = list(range(len(points))) if which is None else list(which)
    if len(points) < 3 or not idx:
        return None
    errs = []
    for i in idx:
        rest = [p for j, p in enumerate(points) if j != i]
        pred = predict(points[i], fit(rest, peak, bw), peak, bw)
        errs.append(abs(pred - points[i].us) / points[i].us)
    return 100.0 * sum(errs) / len(errs)
