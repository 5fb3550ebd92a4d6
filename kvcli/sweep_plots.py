"""`kvcli sweep --plot DIR`: `sweep-OPTION.png` for each swept numeric option.

Left: the token hit rate against the option (dashed: with the CPU tier's hits, when offloading); right: TTFT p99 against it (when the jobs have
latencies). One line per combination of the other swept options (and the trace), so each line
isolates the option's effect. Drawn from the sweep's JSON document; unfinished jobs are left
out, as is a point whose option is none (no CPU tier, say).
"""

from __future__ import annotations

from kvcli.plots import _Charts, sweep_chart
from kvcli.sweep_view import swept_cell


def _numeric(values: list) -> bool:
    nums = [v for v in values if v is not None]
    # (the types first: a list or object value is not hashable)
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in nums) \
        and len(set(nums)) >= 2


def write_sweep_plots(doc: dict, folder: str) -> list[str]:
    jobs = [j for j in doc["jobs"] if j["metrics"] is not None]
    swept = doc["swept"]
    axes = [k for k in swept if k != "trace" and _numeric([j["swept"][k] for j in jobs])]
    if not axes:
        return []
    charts = _Charts(folder)
    plt = charts.plt
    has_ttft = any(j["metrics"]["ttft_p99_ms"] is not None for j in jobs)
    for x in axes:
        others = [k for k in swept if k != x]
        lines: dict[tuple, list[tuple[float, dict]]] = {}
        for j in jobs:
            if j["swept"][x] is None:
                continue
            key = tuple(f"{k}={swept_cell(k, j['swept'][k], j['config'])}" for k in others)
            lines.setdefault(key, []).append((j["swept"][x], j["metrics"]))
        fig, row = plt.subplots(1, 2 if has_ttft else 1, figsize=(12 if has_ttft else 7, 4.5),
                                squeeze=False)
        left = row[0][0]
        for key, pts in lines.items():
            pts.sort(key=lambda p: p[0])
            label = ", ".join(key) or "all"
            (line,) = left.plot([p[0] for p in pts], [100 * (p[1]["hit_rate"] or 0) for p in pts],
                                marker="o", markersize=3, label=label)
            cpu = [(p[0], p[1]["hit_rate_with_cpu"]) for p in pts
                   if p[1]["hit_rate_with_cpu"] is not None]
            if cpu:         # the CPU tier's hits too: dashed, the same colour
                left.plot([p[0] for p in cpu], [100 * p[1] for p in cpu], linestyle="--",
                          color=line.get_color(), linewidth=0.9)
            if has_ttft:
                right = row[0][1]
                ys = [(p[0], p[1]["ttft_p99_ms"]) for p in pts if p[1]["ttft_p99_ms"] is not None]
                right.plot([p[0] for p in ys], [p[1] / 1000 for p in ys], marker="o",
                           markersize=3, label=label)
        tier = any(j["metrics"]["hit_rate_with_cpu"] is not None for j in jobs)
        left.set(xlabel=x, ylabel="token hit rate (%)", title=f"Hit rate against {x}" + (
            " (dashed: with the CPU tier)" if tier else ""))
        left.grid(True, alpha=0.3)
        if has_ttft:
            right = row[0][1]
            right.set(xlabel=x, ylabel="TTFT p99 (s, simulated clock)",
                      title=f"TTFT p99 against {x}")
            right.grid(True, alpha=0.3)
        if len(lines) > 1:
            (row[0][-1]).legend(fontsize=7, loc="best")
        fig.suptitle(f"kvcli sweep ({doc['command']}): {len(jobs)} jobs", fontsize=10)
        charts.save(fig, sweep_chart(x))
    return charts.paths
