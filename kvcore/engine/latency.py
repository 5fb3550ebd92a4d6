"""Latency per request on the simulated clock: time to first token (TTFT), time per output token
(TPOT), end-to-end latency (E2E) and queueing time, for the request lines, the `finish` events
and the summary's distributions (docs/replay-engine.md, "Latency").

Everything is computed from the four times a request's record already holds (its arrival, the
start of its first scheduled step, its first token, its finish), which the engine loop sets as
they happen: nothing here walks the requests step by step (decode windows and the fast-forward
skip per-step work, and the records are the same with and without them).

Each time is taken as the request lines write it (rounded to 6 decimals of a ms), so a line's
`ttft_ms` is its `first_token_ms` minus its arrival to the digit, and a `finish` event, written
before the record holds its finish, carries exactly the values of the line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

# The per-request keys (request lines, `finish` events) and the summary's distributions.
KEYS = ("ttft_ms", "tpot_ms", "e2e_ms", "queue_ms")
# The summary's percentiles (the same method as the summary's `queue_delay_*` keys).
PERCENTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
NO_LATENCY: dict[str, float | None] = dict.fromkeys(KEYS)


def applies(mode: str | None, arrivals: str | None) -> bool:
    """Whether a replay has latencies: engine mode with arrivals on the simulated clock (their
    trace timestamps, or all at time 0 with `ignore`). With `arrivals="step"` requests arrive at
    an engine step whatever the clock says, and cache mode has no clock: there are none."""
    return mode == "engine" and arrivals in ("timestamp", "ignore")


def request_latency(arrival_ms: float | None, first_scheduled_ms: float | None,
                    first_token_ms: float | None, finish_ms: float | None,
                    output_tokens: int | None) -> dict[str, float | None]:
    """A request's `ttft_ms`, `tpot_ms`, `e2e_ms` and `queue_ms` (None where a time is missing,
    and TPOT for a one-token output, which has no inter-token time)."""
    if arrival_ms is None:
        return dict(NO_LATENCY)
    t0 = round(arrival_ms, 6)
    first = None if first_token_ms is None else round(first_token_ms, 6)
    end = None if finish_ms is None else round(finish_ms, 6)
    tpot = None
    if first is not None and end is not None and output_tokens is not None \
            and output_tokens > 1:
        tpot = round((end - first) / (output_tokens - 1), 6)
    return {"ttft_ms": None if first is None else round(first - t0, 6),
            "tpot_ms": tpot,
            "e2e_ms": None if end is None else round(end - t0, 6),
            "queue_ms": (None if first_scheduled_ms is None
                         else round(round(first_scheduled_ms, 6) - t0, 6))}


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ascending values, no interpolation: the value at 0-based index
    ``floor(q * N)`` (the last for q = 1), i.e. the smallest value with more than a fraction
    ``q`` of the values at or below it. It is the method of the summary's `queue_delay_*` keys
    (p50 of 1, 2, 3, 4 is 3)."""
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def distribution(values: Iterable[float]) -> dict[str, float | int | None]:
    """`count`, `mean`, `p50`, `p90`, `p99` and `max` of the values (None but `count` when
    there are none); the mean is rounded to 6 decimals, percentiles are values."""
    ordered = sorted(values)
    n = len(ordered)
    out: dict[str, float | int | None] = {"count": n}
    out["mean"] = round(sum(ordered) / n, 6) if n else None
    for name, q in PERCENTILES:
        out[name] = percentile(ordered, q) if n else None
    out["max"] = ordered[-1] if n else None
    return out


def latency_summary(per_request: Iterable[dict[str, float | None]],
                    uncalibrated: bool | None) -> dict:
    """The summary's `latency` object over the counted requests' latencies (dicts with `KEYS`):
    whether the clock is the uncalibrated default, and one distribution per key."""
    columns: dict[str, list[float]] = {k: [] for k in KEYS}
    for lat in per_request:
        for k in KEYS:
            v = lat[k]
            if v is not None:
                columns[k].append(v)
    return columns_summary(columns, uncalibrated)


def columns_summary(columns: Mapping[str, Iterable[float]], uncalibrated: bool | None) -> dict:
    """`latency_summary` of the values already in columns (one per key of `KEYS`, Nones left
    out; any order)."""
    out: dict = {"uncalibrated": uncalibrated}
    for k in KEYS:
        out[k] = distribution(columns[k])
    return out
