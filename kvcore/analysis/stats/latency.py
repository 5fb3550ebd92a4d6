"""The stats report's `latency` section: the replay's latency distributions recounted from the
stream's `finish` events (each carries its request's `ttft_ms`, `tpot_ms`, `e2e_ms`, `queue_ms`)
over the counted requests (their first `admit` said `counted`), plus a CDF for `--plot`.

The distributions are the replay summary's `latency`, value for value: the same per-request
values (written by the replay) through the same function (`kvcore.engine.latency`).
"""

from __future__ import annotations

import math

from kvcore.engine.latency import KEYS, applies, latency_summary, percentile
from kvcore.errors import InputError

CDF_POINTS = 101        # the values at quantiles 0, 0.01, ..., 1 (bounded, for the chart)


class LatencyStats:
    def __init__(self, header: dict) -> None:
        cfg = header.get("config") or {}
        self.applies = applies(header.get("mode"), cfg.get("arrivals"))
        self.uncalibrated = header.get("uncalibrated_clock")    # None: a stream from before it
        self.counted: set[str] = set()      # counted requests still running
        self.finished: list[dict] = []      # the latencies of those that finished

    def admit(self, ev: dict) -> None:
        if ev["counted"]:
            self.counted.add(ev["req"])

    def finish(self, ev: dict) -> None:
        req = ev["req"]
        if req in self.counted:
            self.counted.discard(req)
            lat = {k: ev.get(k) for k in KEYS}
            # (all four or none, a stream from before latencies: one left out was read as
            # null, a request without that latency)
            gone = [k for k in KEYS if k not in ev]
            if gone and len(gone) < len(KEYS):
                raise InputError("missing (a finish line holds all four latencies, null where "
                                 "they do not apply)", field=gone[0])
            for k, v in lat.items():
                # (a string ttft_ms ended in a TypeError's traceback when sorted; a negative
                # one moved the mean)
                if v is not None and (type(v) not in (int, float) or not 0 <= v < math.inf):
                    raise InputError(f"must be a finite number of ms >= 0 or null, got "
                                     f"{v!r:.40}", field=k)
            self.finished.append(lat)

    def to_json(self) -> dict | None:
        """The summary's `latency` object and `cdf` (per key, the values at 101 quantiles;
        empty without values); None where the replay has no latencies."""
        if not self.applies:
            return None
        out = latency_summary(self.finished, self.uncalibrated)
        cdf = {}
        for k in KEYS:
            ordered = sorted(v for lat in self.finished if (v := lat[k]) is not None)
            cdf[k] = [percentile(ordered, i / (CDF_POINTS - 1))
                      for i in range(CDF_POINTS)] if ordered else []
        out["cdf"] = cdf
        return out
