"""The stats report: the JSON document of a finished `StatsCollector` (keys in docs/stats.md),
each section's part from its own ``to_json``, and the check against the replay's own summary."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvcore.analysis.stats.collector import StatsCollector

STATS_SCHEMA_VERSION = 1


def build_report(c: StatsCollector) -> dict:
    s = c.series.to_json()
    s["used_mean"] = c.series.bucket_mean("used_sum")
    s["cached_mean"] = c.series.bucket_mean("cached_sum")
    t = c.t_ms if c.end_t_ms is None else c.end_t_ms
    reqs = c.reqs
    # (no request, no step: a cluster's idle replica's stream is a header and an `end` at step
    # 0, and `steps` said 1 against its summary's 0)
    out: dict[str, Any] = {
        "schema_version": STATS_SCHEMA_VERSION,
        "source": {"mode": c.header.get("mode"), "block_size": c.header["block_size"],
                   "num_blocks": c.header["num_blocks"], "groups": c.group_types,
                   "trace": c.header.get("trace"), "complete": c.summary is not None,
                   "interrupted": c.interrupted, "steps": c.step + 1 if reqs.requests else 0,
                   "sim_time_ms": t, "requests": reqs.requests, "rejected": reqs.rejected,
                   "finished": reqs.finished},
        "memory": c.mem.to_json(s),
        "eviction": c.ev.to_json(reqs.requests, t, c.reuse.age_at_hit, c.top, s, reqs.name),
        "reuse": c.reuse.to_json(c.top, c.group_bs, s),
        "misses": c.miss.to_json(c.top, reqs.name),
        "preemption": c.pre.to_json(c.top),
        "latency": c.lat.to_json(),
        # the replay's own warnings, as its `end` line carries them
        "warnings": list((c.summary or {}).get("warnings") or []),
    }
    cpu = c.cpu.to_json(out["reuse"]["prompt_tokens"], out["reuse"]["hit_tokens"], c.top)
    if cpu is not None:         # a replay with a CPU tier (docs/offload.md)
        out["cpu_tier"] = cpu
    clock = (c.summary or {}).get("clock")
    if clock is not None:       # a replay timed by a clock other than the default linear one
        out["source"]["clock"] = clock
    out["source"]["summary_mismatches"] = summary_mismatches(c.summary, out)
    return out


def summary_mismatches(summary: dict | None, report: dict) -> dict | None:
    """The totals where the report and the replay's own summary (the `end` line) differ."""
    if not summary:
        return None
    mine = {"requests": report["source"]["requests"],
            "hit_tokens": report["reuse"]["hit_tokens"],
            "prompt_tokens": report["reuse"]["prompt_tokens"],
            "evictions": report["eviction"]["evictions"],
            "preemptions": report["preemption"]["preemptions"],
            "peak_usage": report["memory"]["peak_usage"]}
    if "latency" in summary:    # (a stream from before latencies has none)
        lat = report["latency"]
        mine["latency"] = None if lat is None else {k: v for k, v in lat.items() if k != "cdf"}
    return {k: {"stats": v, "replay": summary.get(k)} for k, v in mine.items()
            if summary.get(k) != v}
