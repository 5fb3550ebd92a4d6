"""The numbers a sweep's table and plots show, taken from each job's result.

A replay's come from its summary, a cluster run's from its one router's result. A metric a
job does not have (no CPU tier, no latencies in cache mode) is None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _at(d: Any, *keys: str) -> Any:
    """``d[k1][k2]...``, None where a level is missing or not an object."""
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def _lat(key: str, q: str) -> Callable[[dict], Any]:
    return lambda r: _at(r, "latency", key, q)


def _offload(key: str) -> Callable[[dict], Any]:
    return lambda r: _at(r, "offload", key)


# name -> (column title, how to take it from a replay's summary or a router's result)
METRICS: dict[str, tuple[str, Callable[[dict], Any]]] = {
    "hit_rate": ("hit rate", lambda r: r.get("hit_rate")),
    "hit_rate_with_cpu": ("hit rate with CPU", _offload("hit_rate_with_cpu")),
    "ttft_p50_ms": ("TTFT p50 ms", _lat("ttft_ms", "p50")),
    "ttft_p99_ms": ("TTFT p99 ms", _lat("ttft_ms", "p99")),
    "tpot_p99_ms": ("TPOT p99 ms", _lat("tpot_ms", "p99")),
    "e2e_p99_ms": ("E2E p99 ms", _lat("e2e_ms", "p99")),
    "queue_p99_ms": ("queueing p99 ms", _lat("queue_ms", "p99")),
    "preemptions": ("preemptions", lambda r: r.get("preemptions")),
    "evictions": ("evictions", lambda r: r.get("evictions")),
    "rejected": ("rejected", lambda r: r.get("rejected")),
    "sim_time_s": ("simulated s", lambda r: r.get("sim_time_s")),
    "routing_loss": ("routing loss", lambda r: r.get("routing_loss")),
    "capacity_loss": ("capacity loss", lambda r: r.get("capacity_loss")),
    "duplication": ("duplication", lambda r: r.get("duplication")),
}
DEFAULTS = {"replay": ("hit_rate", "hit_rate_with_cpu", "ttft_p99_ms", "preemptions",
                       "evictions"),
            "cluster": ("hit_rate", "routing_loss", "capacity_loss", "ttft_p99_ms",
                        "preemptions")}


def metric_values(command: str, result: dict) -> dict[str, Any]:
    """Every metric of one job's result (None where it has none)."""
    routers = result.get("routers")
    base = routers[0] if command == "cluster" and isinstance(routers, list) and routers \
        else result
    base = base if isinstance(base, dict) else {}
    # a number or nothing: a hand-edited line's "0.5" (a string) broke the table's format
    return {name: v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
            for name, (_, get) in METRICS.items() for v in (get(base),)}


def chosen(command: str, names: list[str] | None, rows: list[dict[str, Any]]) -> list[str]:
    """The metrics a table shows: `names`, or the command's defaults that some job has."""
    if names:
        return names
    return [m for m in DEFAULTS[command] if any(r.get(m) is not None for r in rows)]


def swept_keys(lines: list[dict[str, Any]]) -> list[str]:
    """The options whose value differs between jobs (and `trace` if several): what a results
    file sweeps, read back without its spec. Options in the first line's order."""
    out = ["trace"] if len({d["trace_sha256"] for d in lines}) > 1 else []
    keys: list[str] = []
    for d in lines:
        keys += [k for k in d["config"] if k not in keys]
    for k in keys:
        if len({repr(d["config"].get(k)) for d in lines}) > 1:
            out.append(k)
    return out
