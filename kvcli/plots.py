"""Charts: the PNGs of `kvcli stats --plot DIR` and `kvcli curve --plot DIR` (one option, one
meaning: a folder, created when missing, that the charts are written into), and the text sparkline
under the stats tables.

Every chart is drawn from the command's JSON document (the stats report's bounded timelines and
log2 histograms; the curve's points), so none needs the events again. matplotlib (the optional
`plot` extra) is imported here only, and only when a chart is asked for.
"""

from __future__ import annotations

import os
import sys

from kvcore.errors import InputError

_SPARK = " ▁▂▃▄▅▆▇█"
# The same nine levels for a stdout that cannot write the blocks (PYTHONIOENCODING=ascii or
# latin-1): escaped, each block became six characters ("\u2581") and the line lost its columns.
_SPARK_ASCII = " .:-=+*#@"

# the files each command's `--plot DIR` may write (stats: latency.png only with latencies)
STATS_CHARTS = ("usage.png", "hit_rate.png", "evictions.png", "lifetime.png", "idle.png",
                "reuse_gap.png", "latency.png")
CURVE_CHART = "curve.png"
CLUSTER_CHART = "cluster.png"


def sweep_chart(option: str) -> str:
    return f"sweep-{option}.png"


def sweep_charts(folder: str | None, swept: list[str]) -> list[tuple[str, str | None]]:
    """`chart_outputs` of `kvcli sweep --plot folder`: one chart a swept option but the trace."""
    return chart_outputs(folder, [sweep_chart(k) for k in swept if k != "trace"])


def chart_outputs(folder: str | None, names) -> list[tuple[str, str | None]]:
    """The charts ``--plot folder`` may write, as `output.check_distinct` outputs: an input or
    another output of one of these names would be replaced by a PNG (`sweep --results
    D/sweep-num_blocks.png --plot D` lost the results file, exit 0)."""
    return [] if folder is None else [("plot", os.path.join(folder, n)) for n in names]


def sparkline(values: list[int], top: int, width: int = 60, encoding: str | None = None) -> str:
    """A one-line usage timeline: ``values`` (per bucket) squeezed into ``width`` characters,
    drawn in blocks, or in ASCII where ``encoding`` (stdout's when None) cannot hold them."""
    if not values:
        return ""
    if encoding is None:
        encoding = getattr(sys.stdout, "encoding", None)
    ramp = _SPARK if _holds(encoding, _SPARK) else _SPARK_ASCII
    per = -(-len(values) // width)
    cols = [max(values[i:i + per]) for i in range(0, len(values), per)]
    top = max(top, 1)
    return "".join(ramp[min(8, -(-v * 8 // top))] for v in cols)


def _holds(encoding: str | None, text: str) -> bool:
    try:
        text.encode(encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def require_matplotlib() -> None:
    """Refuse ``--plot`` without matplotlib (the 'plot' extra), before any work."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise InputError("needs matplotlib: pip install 'kvcli[plot]'", field="plot")


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise InputError("needs matplotlib: pip install 'kvcli[plot]'", field="plot") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


class _Charts:
    """The folder a command's charts go into: created (with its parents) when missing; each
    chart saved by kvcli's one writer, under a temporary name renamed when complete (never a
    half-written PNG; a full disk is one line, exit 1)."""

    def __init__(self, folder: str) -> None:
        self.plt = _pyplot()
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as err:
            raise InputError(f"cannot create the folder: {err.strerror}", path=folder,
                             field="plot") from None
        self.folder = folder
        self.paths: list[str] = []

    def save(self, fig, name: str, dpi: int = 100) -> None:
        from kvcli.output import open_output

        path = os.path.join(self.folder, name)
        fig.tight_layout()
        try:
            with open_output(path, field="plot") as f:
                fig.savefig(f, dpi=dpi, format="png")
        finally:
            self.plt.close(fig)
        self.paths.append(path)


def write_plots(report: dict, folder: str) -> list[str]:
    """Write usage, hit rate, evictions, lifetime and reuse-gap charts, and the latency CDFs
    when the replay has latencies; return their paths."""
    charts = _Charts(folder)
    plt, save = charts.plt, charts.save
    mem, ev, reuse = report["memory"], report["eviction"], report["reuse"]
    width = mem["timeline"]["bucket_steps"]
    xs = [i * width for i in range(len(mem["timeline"]["used_max"]))]

    usable = mem["usable_blocks"]
    mt = mem["timeline"]
    used = [100 * u / usable for u in mt["used_mean"]]
    cached = [100 * c / usable for c in mt["cached_mean"]]
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.stackplot(xs, used, cached, step="post", alpha=0.7,
                 labels=["in use by requests (mean)", "cached, evictable (mean)"])
    ax.step(xs, [100 * u / usable for u in mt["used_max"]], where="post", linewidth=0.8,
            color="black", label="in use (max)")
    ax.set_ylim(0, 105)
    ax.set(xlabel="engine step", ylabel="% of usable blocks",
           title=f"KV cache usage (peak {100 * mem['peak_usage']:.1f}% of {usable:,} blocks)")
    ax.legend(loc="lower right", fontsize=8)
    save(fig, "usage.png")

    tl = reuse["timeline"]
    rate = [100 * h / p if p else None for p, h in zip(tl["prompt_tokens"], tl["hit_tokens"])]
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.plot([x for x, r in zip(xs, rate) if r is not None], [r for r in rate if r is not None],
            drawstyle="steps-post")
    ax.axhline(100 * reuse["hit_rate"], color="grey", linestyle="--",
               label=f"whole run {100 * reuse['hit_rate']:.1f}%")
    ax.set_ylim(0, 100)
    ax.set(xlabel="engine step (admission)", ylabel="token hit rate %",
           title="Prefix-cache hit rate over time")
    ax.legend(loc="lower right")
    save(fig, "hit_rate.png")

    evs = ev["timeline"]["evictions"]
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.bar(xs, evs, width=width, align="edge")
    ax.set(xlabel="engine step", ylabel=f"evictions per {width:,} steps",
           title=f"Evictions over time ({ev['evictions']:,} in all)")
    save(fig, "evictions.png")

    _hist(plt, ev["lifetime_steps"], "Block lifetime (allocate to evict)", save, "lifetime.png")
    _hist(plt, ev["idle_before_evict_steps"], "Idle before eviction", save, "idle.png")
    _hist(plt, reuse["reuse_gap_steps"], "Reuse gap (between uses of a cached block)", save,
          "reuse_gap.png")
    lat = report.get("latency")
    if lat is not None and any(lat["cdf"].values()):
        _latency_cdf(plt, lat, save)
    return charts.paths


_CDF_LINES = (("ttft_ms", "TTFT"), ("e2e_ms", "end to end"), ("queue_ms", "queueing"))


def _latency_cdf(plt, lat: dict, save) -> None:
    """latency.png: the CDFs of TTFT, end-to-end and queueing time (left) and of TPOT (right,
    a smaller scale), from the report's 101 quantiles a measure."""
    cdf = lat["cdf"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
    ys = list(range(101))       # the report's 101 quantiles: 0, 1, ..., 100 %
    for key, name in _CDF_LINES:
        if cdf[key]:
            left.plot(cdf[key], ys, drawstyle="steps-post",
                      label=f"{name} (p50 {lat[key]['p50']:,.1f}, p99 {lat[key]['p99']:,.1f})")
    left.set(xlabel="ms", ylabel="% of requests", title="Time to first token, end to end, queueing")
    left.legend(loc="lower right", fontsize=8)
    if cdf["tpot_ms"]:
        right.plot(cdf["tpot_ms"], ys, drawstyle="steps-post")
    t = lat["tpot_ms"]
    right.set(xlabel="ms per output token", title="Time per output token" + (
        f" (p50 {t['p50']:,.2f}, p99 {t['p99']:,.2f})" if t["count"] else " (none)"))
    for ax in (left, right):
        ax.set_ylim(0, 100)
        ax.grid(True, alpha=0.3)
    clock = "UNCALIBRATED clock: kvcli's default step-time model" if lat.get("uncalibrated") \
        else "simulated clock"
    fig.suptitle(f"Request latency, {lat['e2e_ms']['count']:,} counted requests ({clock})",
                 fontsize=10)
    save(fig, "latency.png")


def _hist(plt, dist: dict, title: str, save, name: str) -> None:
    bins = dist.get("log2_bins") or []
    fig, ax = plt.subplots(figsize=(6, 3))
    labels = [f"{lo}" if hi - lo == 1 else f"{lo}-{hi - 1}" for lo, hi, _ in bins]
    ax.bar(range(len(bins)), [c for _, _, c in bins])
    ax.set_xticks(range(len(bins)), labels, rotation=45, ha="right", fontsize=8)
    p = " ".join(f"{k} {dist[k]}" for k in ("p50", "p90", "p99", "max") if dist.get(k) is not None)
    ax.set(xlabel="steps", ylabel="blocks", title=f"{title}\n{p}")
    save(fig, name)


def write_curve_plot(result, folder: str) -> str:
    """The curves of a `CurveResult` as ``folder/curve.png``; return its path."""
    charts = _Charts(folder)
    fig, ax = charts.plt.subplots(figsize=(8, 5))
    for policy in result.knees:
        pts = [p for p in result.points if p.policy == policy and p.hit_rate is not None]
        ax.plot([p.capacity_blocks for p in pts], [100 * p.hit_rate for p in pts],
                marker="o", markersize=3, label=policy)
    ax.axhline(100 * result.ceiling, linestyle="--", color="grey",
               label=f"ceiling {100 * result.ceiling:.1f}%")
    ax.set_xscale("log")
    ax.set_xlabel(f"capacity (usable blocks of {result.block_size} tokens)")
    ax.set_ylabel("token hit rate (%)")
    ax.set_title(f"{result.trace} ({result.rule} rule, warm-up {result.warmup:g})", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    charts.save(fig, CURVE_CHART, dpi=120)
    return charts.paths[0]
