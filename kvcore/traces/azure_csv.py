"""Azure's LLM inference traces (2023, 2024): CSV rows of TIMESTAMP,ContextTokens,GeneratedTokens,
read by `kvcore.traces.reader` (the header is checked there). The requests carry lengths only:
each gets unique block ids (`formats._unique`), as a lengths trace's do."""

from __future__ import annotations

from datetime import datetime

from kvcore.errors import clipped
from kvcore.traces.arrival_fields import _check_time
from kvcore.traces.formats import _unique
from kvcore.traces.limits import MAX_REQUEST_TOKENS
from kvcore.traces.line_values import _Ctx
from kvcore.traces.request import TraceRequest


def parse_azure_row(row: list[str], ctx: _Ctx, index: int) -> TraceRequest:
    if len(row) != 3:
        raise ctx.err(None, f"expected 3 columns TIMESTAMP,ContextTokens,GeneratedTokens, "
                            f"got {len(row)}")
    try:
        # Python's fromisoformat takes at most 6 fractional digits; Azure writes 7.
        ts = row[0].strip()
        if "." in ts:
            head, frac = ts.split(".", 1)
            digits = len(frac) - len(frac.lstrip("0123456789"))
            ts = f"{head}.{frac[:min(digits, 6)]}{frac[digits:]}"     # (keeps a +HH:MM)
        t = datetime.fromisoformat(ts)
    except ValueError:
        raise ctx.err("TIMESTAMP", f"not a date-time: {clipped(row[0])}") from None
    if ctx.t0 is None:
        ctx.t0 = t
    elif (t.tzinfo is None) != (ctx.t0.tzinfo is None):
        # (the two cannot be subtracted: a TypeError traceback)
        raise ctx.err("TIMESTAMP", f"{clipped(row[0])} {'has no' if t.tzinfo is None else 'has a'} "
                                   "UTC offset and the first row's "
                                   f"{'has one' if t.tzinfo is None else 'has none'}")
    vals: dict[str, int] = {}
    for key, text in (("ContextTokens", row[1]), ("GeneratedTokens", row[2])):
        number = text.strip().removeprefix("-")
        if not (number.isascii() and number.isdigit()):     # (int() takes "4_808", "٤")
            raise ctx.err(key, f"must be an integer, got {clipped(text)}")
        width = len(number.lstrip("0"))
        if width > 18:      # (within it, the count itself is quoted below)
            # (int() of 4,301 digits or more is Python's ValueError, with a traceback)
            raise ctx.err(key, f"must be >= 1, got a {width:,}-digit negative number"
                          if text.strip().startswith("-") else f"a {width:,}-digit number of "
                          f"tokens is more than the limit of {MAX_REQUEST_TOKENS:,} tokens a "
                          "request")
        vals[key] = int(text)
        if vals[key] < 1:
            raise ctx.err(key, f"must be >= 1, got {vals[key]}")
        if vals[key] > MAX_REQUEST_TOKENS:
            raise ctx.err(key, f"{vals[key]:,} tokens is more than the limit of "
                               f"{MAX_REQUEST_TOKENS:,} tokens a request")
    t_ms = (t - ctx.t0).total_seconds() * 1000.0
    if t_ms < 0:
        raise ctx.err("TIMESTAMP", "earlier than the first row")
    _check_time(t_ms, "TIMESTAMP", ctx)
    return _unique(ctx, index, str(index), vals["ContextTokens"], vals["GeneratedTokens"], t_ms)
