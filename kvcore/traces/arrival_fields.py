"""When a trace line's request arrives: its ``timestamp`` (ms, or a format's seconds) and its
``arrival_step``, each within its limit (`limits.py`)."""

from __future__ import annotations

from kvcore.traces.limits import MAX_ARRIVAL_STEP, MAX_TIMESTAMP_MS
from kvcore.traces.line_values import _Ctx, _int, _num


def _timestamp(obj: dict, ctx: _Ctx, scale: float = 1.0) -> float:
    """The arrival time in ms (the trace's ``timestamp`` times ``scale``), within
    `MAX_TIMESTAMP_MS`."""
    t = _num(obj, "timestamp", ctx) * scale
    _check_time(t, "timestamp", ctx)
    return t


def _check_time(t_ms: float, key: str, ctx: _Ctx) -> None:
    if t_ms > MAX_TIMESTAMP_MS:
        raise ctx.err(key, f"is {t_ms:.6g} ms, past the limit of {MAX_TIMESTAMP_MS:.0e} ms (about "
                           "317 years: beyond it the clock cannot keep steps apart)")


def _arrival_step(obj: dict, ctx: _Ctx) -> int:
    """The optional ``arrival_step`` (default 0), within `MAX_ARRIVAL_STEP`."""
    step = _int(obj, "arrival_step", ctx, default=0)
    if step > MAX_ARRIVAL_STEP:
        raise ctx.err("arrival_step", f"is {step:,}, past the limit of 2^53 = "
                                      f"{MAX_ARRIVAL_STEP:,} steps")
    return step

