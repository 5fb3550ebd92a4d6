"""`kvcli stats`' tables: the report's sections (memory, eviction churn, block residency,
prefix reuse, misses, preemption, the CPU tier, latency) and the usage sparkline under them
(docs/stats.md has the JSON they are drawn from)."""

from __future__ import annotations

from kvcli import output

_DIST_COLS = ("count", "mean", "p50", "p90", "p99", "max")


def _dist_row(label: str, d: dict) -> tuple:
    return (label, *(d.get(k) for k in _DIST_COLS))


def _columns(rows: list[tuple], means: tuple[int, ...] = (2,)) -> list[tuple]:
    """One precision per column, thousands separators everywhere: the ``means`` columns and
    any column holding a fractional value show every number with one decimal, the others
    integers."""
    def frac(v) -> bool:
        return isinstance(v, float) and not v.is_integer()

    ncol = max((len(r) for r in rows), default=0)
    decimal = [i in means or any(frac(r[i]) for r in rows if i < len(r)) for i in range(ncol)]

    def cell(v, i: int):
        if v is None or isinstance(v, (str, bool)) or not isinstance(v, (int, float)):
            return "" if v is None else v
        return f"{v:,.1f}" if decimal[i] else f"{round(v):,}"

    return [tuple(cell(v, i) for i, v in enumerate(r)) for r in rows]


def _num(x) -> str:
    return "" if x is None else f"{x:,.1f}"


def _pct(x) -> str:
    return "" if x is None else f"{100 * x:.2f}%"


def stats_view(r: dict) -> output.View:
    from kvcli.plots import sparkline

    src, mem, ev, reuse, miss, pre = (r["source"], r["memory"], r["eviction"], r["reuse"],
                                      r["misses"], r["preemption"])
    tables = []
    rows = []
    for label, key in (("in use", "used_blocks"), ("cached, evictable", "cached_blocks"),
                       ("free", "free_blocks")):
        d = mem[key]
        rows.append((label, d["peak"], d["mean_time"], d["mean_steps"], d["p50"], d["p90"],
                     d["p99"]))
    tables.append(output.Table(
        f"Memory: blocks of {mem['usable_blocks']:,} usable ({src['mode']} mode, block size "
        f"{src['block_size']}, {src['steps']:,} steps)",
        ("blocks", "peak", "mean (time)", "mean (steps)", "p50", "p90", "p99"), _columns(rows, (2, 3)),
        caption=f"peak usage {_pct(mem['peak_usage'])} at step {mem['peak_step']}; "
                f"empty slots in last blocks {_pct(mem['empty_slots_fraction'])}"))
    tables.append(output.Table("Per request (at its end)", ("tokens", *_DIST_COLS), _columns([
        _dist_row("KV tokens held", mem["kv_tokens_per_request"]),
        _dist_row("slots allocated", mem["slots_per_request"]),
        _dist_row("empty slots", mem["empty_slots_per_request"])])))
    reg = ev["regret"]
    tables.append(output.Table("Eviction churn", ("", "value"), [
        ("evictions (cached blocks)", ev["evictions"]),
        ("per 1,000 requests", _num(ev["per_1000_requests"])),
        ("per simulated minute", _num(ev["per_minute"])),
        ("regret: evicted, then needed again", reg["evictions"]),
        ("regret: share of evictions", _pct(reg["fraction"])),
        ("regret: tokens recomputed", reg["recomputed_tokens"]),
        ("evicted younger than the median hit age", _pct(
            ev["evicted_younger_than_median_hit_age"])),
    ]))
    tables.append(output.Table("Block residency (steps; cached blocks only)",
                               ("", *_DIST_COLS), _columns([
        _dist_row("lifetime (allocate to evict)", ev["lifetime_steps"]),
        _dist_row("idle before evict", ev["idle_before_evict_steps"]),
        _dist_row("age at eviction", ev["age_at_evict_steps"]),
        _dist_row("age at hit", ev["age_at_hit_steps"]),
        _dist_row("reuse gap", reuse["reuse_gap_steps"]),
        _dist_row("reuse distance (requests)", reuse["reuse_distance_requests"]),
        _dist_row("regret gap (evict to re-cache)", reg["gap_steps"]),
    ])))
    rh = reuse["request_hit_rate"]
    tables.append(output.Table("Prefix reuse (counted admissions)", ("", "value"), [
        ("requests", reuse["requests"]),
        ("prompt tokens", reuse["prompt_tokens"]),
        ("hit tokens", reuse["hit_tokens"]),
        ("hit rate, by tokens", _pct(reuse["hit_rate"])),
        ("hit rate, mean by requests", _pct(reuse["request_hit_rate_mean"])),
        ("requests with a hit", reuse["requests_with_hit"]),
        ("per request p50 / p90 / p99", " / ".join(_pct(rh[k]) for k in ("p50", "p90", "p99"))),
        ("distinct blocks hit", reuse["distinct_blocks_hit"]),
    ]))
    wins = reuse["windows_by_requests"]["windows"]
    if len(wins) > 1:
        tables.append(output.Table(
            f"Hit rate per {reuse['windows_by_requests']['size']:,} requests",
            ("window", "requests", "prompt tokens", "hit tokens", "hit rate"),
            [(str(i + 1), w["requests"], w["prompt_tokens"], w["hit_tokens"], _pct(w["hit_rate"]))
             for i, w in enumerate(wins[:40])],
            caption=f"{len(wins) - 40} more in --json" if len(wins) > 40 else None))
    if reuse["top_prefixes"]:
        tables.append(output.Table(
            "Most shared prefixes", ("prefix (last block hash)", "group", "tokens", "hits"),
            [(f"{p['hash']:016x}", p["group"], p["prefix_tokens"], p["hits"])
             for p in reuse["top_prefixes"]],
            caption="hits = admissions that adopted the whole prefix from the cache"))
    missed = miss["missed_tokens"] or 1
    tables.append(output.Table("Why prompt tokens missed", ("reason", "tokens", "share", "blocks",
                                                            "requests"),
                               [(k, miss["tokens"][k], _pct(miss["tokens"][k] / missed),
                                 miss["blocks"][k], miss["requests"][k]) for k in miss["reasons"]
                                if miss["tokens"][k] or k in ("cold", "evicted")],
                               caption=f"{miss['missed_tokens']:,} missed tokens"))
    tables.append(output.Table("Preemption", ("", "value"), [
        ("preemptions", pre["preemptions"]),
        ("recomputed tokens", pre["recomputed_tokens"]),
        ("victims (requests)", pre["victims"]),
        ("re-admissions", pre["resumed_admissions"]),
        ("hit tokens at re-admission", pre["resumed_hit_tokens"]),
    ]))
    cpu = r.get("cpu_tier")
    if cpu is not None:
        tables.append(output.Table("CPU tier (vLLM's native offloading)", ("", "value"), [
            ("hit rate with the tier (tokens)", round(cpu["hit_rate_with_cpu"], 5)),
            ("CPU hit tokens (counted admissions)", cpu["cpu_hit_tokens"]),
            ("requests with CPU hits", cpu["requests_with_cpu_hits"]),
            ("loads: jobs / chunks (sync)", (f"{cpu['loads']:,} / {cpu['chunks_loaded']:,} "
                                             f"({cpu['sync_loads']:,})")),
            ("stores: jobs / chunks", f"{cpu['stores']:,} / {cpu['chunks_stored']:,}"),
            ("CPU evictions: chunks / batches", (f"{cpu['cpu_evictions']:,} / "
                                                 f"{cpu['eviction_batches']:,}")),
            ("failed offers", cpu["failed_offers"]),
            ("resident chunks: peak / end", (f"{cpu['max_resident_chunks']:,} / "
                                             f"{cpu['resident_chunks_end']:,}")),
        ]))
    if r.get("latency") is not None:
        from kvcli.latency_view import latency_table

        tables.append(latency_table(r["latency"]))
    tl = mem["timeline"]
    line = sparkline(tl["used_max"], mem["usable_blocks"], width=56)
    per = -(-src["steps"] // max(1, len(line)))
    text = [f"usage |{line}| peak {_pct(mem['peak_usage'])}",
            f"      (blocks in use, max per ~{per:,} steps; top = {mem['usable_blocks']:,})"]
    if not src["complete"]:
        text.append("note: the stream was interrupted; these are the statistics so far")
    return output.View(data=r, tables=tables, text=text)
