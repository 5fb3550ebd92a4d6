"""`kvcli cluster --plot DIR`: `cluster.png`, one chart per run.

Left: per router, the trace ceiling split into the hit rate achieved, the capacity loss and the
routing loss (stacked: the bar's top is the trace ceiling). Right: per router, each replica's
share of the computed prefill tokens (a bar per replica, replica 0 first, in the key up to 16
replicas; even = 1/N, the dashed line).
"""

from __future__ import annotations

from kvcli.plots import CLUSTER_CHART, _Charts


def write_cluster_plot(result: dict, folder: str) -> list[str]:
    charts = _Charts(folder)
    plt = charts.plt
    routers = result["routers"]
    names = [r["router"] for r in routers]
    n = result["replicas"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
    xs = range(len(routers))
    hit = [100 * r["hit_rate"] for r in routers]
    cap = [100 * max(r["capacity_loss"], 0.0) for r in routers]
    route = [100 * r["routing_loss"] for r in routers]
    left.bar(xs, hit, label="hit rate")
    left.bar(xs, cap, bottom=hit, label="capacity loss")
    left.bar(xs, route, bottom=[h + c for h, c in zip(hit, cap, strict=True)],
             label="routing loss")
    left.set_xticks(list(xs), names, rotation=30, ha="right")
    left.set(ylabel="% of prompt tokens",
             title=f"Token hit rate and its losses ({n} replicas; top = trace ceiling)")
    # (headroom above 100% for the key, which sat on the bars' tops)
    left.set_ylim(0, 130)
    left.set_yticks(range(0, 101, 20))
    left.legend(fontsize=8, ncol=3, loc="upper center")
    width = 0.8 / n
    for i in range(n):
        shares = []
        for r in routers:
            total = sum(x["computed_prefill_tokens"] for x in r["replicas"])
            shares.append(r["replicas"][i]["computed_prefill_tokens"] / total if total else 0)
        right.bar([x + i * width for x in xs], shares, width=width, label=f"replica {i}")
    right.axhline(1 / n, color="grey", linestyle="--", linewidth=0.8, label=f"even (1/{n})")
    right.set_xticks([x + 0.4 - width / 2 for x in xs], names, rotation=30, ha="right")
    right.set(ylabel="share of computed prefill tokens", title="Balance: one bar per replica")
    # (bars are replicas 0..N-1 left to right in each group; past 16 a key would hide them)
    if n <= 16:
        right.legend(fontsize=7, ncol=1 + n // 9, loc="upper left", bbox_to_anchor=(1.01, 1))
    charts.save(fig, CLUSTER_CHART)
    return charts.paths
