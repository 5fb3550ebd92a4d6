"""The latency table a person sees (`kvcli replay`'s summary and `kvcli stats`): one row per
measure of a `latency` object (docs/replay-engine.md, "Latency"), labelled when the clock is kvcli's
uncalibrated default."""

from __future__ import annotations

from kvcli.output import Table

ROWS = (("TTFT (to first token)", "ttft_ms"), ("TPOT (per output token)", "tpot_ms"),
        ("end to end", "e2e_ms"), ("queueing (to first step)", "queue_ms"))
COLUMNS = ("count", "mean", "p50", "p90", "p99", "max")


def latency_table(lat: dict) -> Table:
    uncalibrated = bool(lat.get("uncalibrated"))
    rows = [(name, *(lat[key][c] if c == "count" else _ms(lat[key][c]) for c in COLUMNS))
            for name, key in ROWS]
    caption = ("counted requests that finished (warm-up and rejected left out); pN = the "
               "sorted value at index floor(N/100 x count)")
    if uncalibrated:
        caption += ("; UNCALIBRATED: kvcli's default step-time model, measured on no GPU: not a "
                    "latency prediction")
    return Table(f"Latency, ms ({'uncalibrated clock' if uncalibrated else 'simulated clock'})",
                 ("", *COLUMNS), rows, caption=caption)


def _ms(v) -> str:
    return "" if v is None else f"{v:,.3f}"
