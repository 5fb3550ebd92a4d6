"""When a trace line's request arrives: its ``timestamp`` (ms, or a format's seconds) and its
``arrival_step``, each within its limit (`limits.py`).

A trace gives every request a timestamp or none. With none (the oracle's cases, hash-id lines
written by hand) every request arrives at 0 ms, in file order. A line without one in a trace
whose first request has one read as 0 ms too, and was replayed first, said only by the count of
requests out of order (a Mooncake line that lost its field, a null): it is refused, naming the
line, and so is a timestamp on a line of a trace whose first request has none."""

from __future__ import annotations

from kvcore.traces.limits import MAX_ARRIVAL_STEP, MAX_TIMESTAMP_MS
from kvcore.traces.line_values import _Ctx, _int, _num


def _timestamp(obj: dict, ctx: _Ctx, scale: float = 1.0) -> float:
    """The arrival time in ms (the trace's ``timestamp`` times ``scale``), within
    `MAX_TIMESTAMP_MS`."""
    same_timing(obj.get("timestamp") is not None, "timestamp" in obj, ctx)
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


def same_timing(has: bool, written: bool, ctx: _Ctx) -> None:
    """This line has a timestamp (``has``; ``written``: the key is there, if null) as the
    trace's first request has one, or has none as it has none."""
    if ctx.timed is None:
        ctx.timed, ctx.timed_line = has, ctx.line
    elif has != ctx.timed:
        what = "given" if has else "null" if written else "missing"
        raise ctx.err("timestamp", f"{what}, but the first request (line {ctx.timed_line}) has "
                                   f"{'none' if has else 'one'}: a trace gives every request a "
                                   "timestamp or none (with none, all arrive at 0 ms)")
