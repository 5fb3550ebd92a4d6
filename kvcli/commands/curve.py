"""`kvcli curve TRACE`: hit rate against cache capacity, every capacity at once, and eviction
policies compared (cache mode: one request at a time). JSON keys are documented in docs/curve.md.
"""

from __future__ import annotations

import math
import os
from typing import Annotated

import typer

from kvcli import output
from kvcore.errors import InputError

_CAP = "Capacities (give one; default: a geometric sweep up to the ceiling)"


def register(app: typer.Typer) -> None:
    @app.command("curve")
    def curve(
        trace: Annotated[str, typer.Argument(help="Trace file (Mooncake/Bailian hash ids, token "
                                             "ids, ...; .gz or '-' for stdin).")],
        policies: Annotated[str, typer.Option(help="Comma-separated: lru, fifo, lfu, eager, "
                                              "optimal.")] = "lru",
        rule: Annotated[str, typer.Option(help="vllm: full blocks only, hit <= N-1 tokens, "
                                          "blocks held while a request runs; trace: every "
                                          "trace block (partial included) is cacheable.")]
        = "vllm",
        block_size: Annotated[int | None, typer.Option(
            show_default=False, help="Tokens per block. [default: 16 with --model, else the "
            "trace's block size, else 16]")] = None,
        warmup: Annotated[float, typer.Option(help="Fraction of the requests (the first ones) "
                                              "left out of the hit rate.")] = 0.0,
        capacities: Annotated[str | None, typer.Option(
            help="Usable blocks, comma-separated (capacity C is --num-blocks C+1 in a replay).",
            rich_help_panel=_CAP)] = None,
        capacity_tokens: Annotated[str | None, typer.Option(
            help="Tokens, comma-separated (blocks = tokens // block size).",
            rich_help_panel=_CAP)] = None,
        capacity_gib: Annotated[str | None, typer.Option(
            help="GiB of KV cache, comma-separated (needs --model).", rich_help_panel=_CAP)]
        = None,
        model: Annotated[str | None, typer.Option(help="Model preset or HF repo id, for "
                                                  "--capacity-gib.", rich_help_panel=_CAP)]
        = None,
        jobs: Annotated[int, typer.Option(help="Processes for the exact per-capacity runs.")]
        = 1,
        as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")]
        = False,
        plot: Annotated[str | None, typer.Option("--plot", metavar="DIR",
                        help="Write the chart DIR/curve.png (as stats --plot DIR; needs the "
                        "'plot' extra).")] = None,
    ) -> None:
        """Hit rate against KV cache capacity: the whole LRU curve in one pass, its ceiling and
        knees, and other eviction policies at chosen capacities."""
        output.run(lambda: run_curve(trace, policies=policies, rule=rule, block_size=block_size,
                                     warmup=warmup, capacities=capacities,
                                     capacity_tokens=capacity_tokens, capacity_gib=capacity_gib,
                                     model=model, jobs=jobs, as_json=as_json, plot=plot))


def run_curve(trace: str, *, policies: str, rule: str, block_size: int | None, warmup: float,
              capacities: str | None, capacity_tokens: str | None, capacity_gib: str | None,
              model: str | None, jobs: int, as_json: bool, plot: str | None) -> None:
    from kvcore.analysis.curve import CurveOptions, compute_curve, parse_numbers

    if plot is not None:
        from kvcli.plots import CURVE_CHART, chart_outputs, require_matplotlib

        if plot.lower().endswith(".png") and not os.path.isdir(plot):
            # The option was once a file; a folder named x.png would only surprise.
            raise InputError(f"{plot}: --plot takes a folder (the chart is written as "
                             "DIR/curve.png, as stats --plot DIR writes its charts)", field="plot")
        output.check_output(plot, "plot", folder=True)      # before the work
        output.check_distinct([("the trace", trace)], chart_outputs(plot, [CURVE_CHART]))
        require_matplotlib()
    opts = CurveOptions(
        policies=tuple(p.strip().lower() for p in policies.split(",") if p.strip()),
        rule=rule, block_size=block_size, warmup=warmup,
        capacities=parse_numbers(capacities, "capacities"),
        capacity_tokens=parse_numbers(capacity_tokens, "capacity_tokens"),
        capacity_gib=parse_numbers(capacity_gib, "capacity_gib", kind=float),
        model=model, jobs=jobs)
    with output.progress(None, "exact points (requests run)") as advance:
        result = compute_curve(trace, opts, advance=advance, on_total=advance.total)
    for w in result.warnings:
        output.warn(w)
    if plot is not None:
        from kvcli.plots import write_curve_plot

        output.message(f"wrote {write_curve_plot(result, plot)}")
    output.emit(curve_view(result), as_json=as_json)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def curve_view(result) -> output.View:
    d = result.to_dict()
    ceiling = result.ceiling
    gib = any(p.capacity_gib is not None for p in result.points)
    rows = [(p.policy, *((f"{p.capacity_gib:g}",) if gib else ()), p.capacity_blocks,
             p.capacity_tokens, _pct(p.hit_rate),
             "-" if p.hit_rate is None or ceiling == 0 else f"{100 * p.hit_rate / ceiling:.1f}%",
             p.rejected, p.method) for p in result.points]
    points = output.Table(
        f"Hit rate by capacity ({result.rule} rule, block size {result.block_size}, "
        f"warm-up {result.warmup:g})",
        ("policy", *(("GiB",) if gib else ()), "blocks", "tokens", "hit rate", "of ceiling",
         "rejected", "method"), rows,
        caption="capacity in usable blocks (a replay's --num-blocks minus the null block); a "
        "rejected request's prompt counts as missed")
    def knee(pol: str, k: str) -> object:
        v, how = result.knees[pol][k], result.knee_method[pol][k]
        # (an upper bound is marked in its cell: the "from" column listed the methods only)
        return "-" if v is None else v if how == "one-pass" else f"<= {v:,}"
    knee_rows = [(pol, *(knee(pol, k) for k in ("50", "90", "95", "99")),
                  " / ".join(dict.fromkeys(m for m in result.knee_method[pol].values() if m))
                  or "-") for pol in result.knees]
    knees = output.Table("Smallest capacity (blocks) reaching a fraction of the ceiling",
                         ("policy", "50%", "90%", "95%", "99%", "from"), knee_rows,
                         caption="<= N: an upper bound (points, bound); docs/curve.md, Knees")
    lo, hi = result.one_pass_exact
    top = "any" if math.isinf(hi) else f"{int(hi):,}"
    cap = result.ceiling_capacity_blocks
    reached = (f"reached at {cap:,} blocks" if cap is not None else
               "not reached at the LRU capacities evaluated")
    text = [(f"ceiling (infinite cache): {_pct(ceiling)}, {reached}; "
             f"{result.distinct_blocks:,} distinct blocks; {result.counted_requests:,} of "
             f"{result.requests:,} requests counted"),
            (f"one-pass LRU exact for capacities {lo:,} to {top}" if lo <= hi else
             "one-pass LRU exact for no capacity of this trace (every LRU point is a replay)")]
    return output.View(d, tables=[points, knees], text=text)
