"""`kvcli cluster`'s one function: check and open the outputs, run the routers, the view.

The tables: one row per router (hit rate, the ceilings and the two losses, duplication,
balance, latency, preemptions), then, per router, one row per replica.
"""

from __future__ import annotations

import contextlib
import os
import sys

from kvcli import output
from kvcli import replay_options as ro
from kvcore.cluster.router_opts import parse_router_opts
from kvcore.errors import InputError


def run(trace: str, opts, replicas: int, names: list[str], raw_opts: list[str], seed: int,
        metrics_interval_ms: float, kv_event_lag_ms: float, events: str | None,
        decisions: str | None, as_json: bool, plot: str | None = None, live_opts=None,
        metrics: str | None = None, names_field: str = "router",
        router_dropped: str | None = None) -> int:
    from kvcore.cluster.options import ClusterOptions
    from kvcore.cluster.run import run_cluster
    from kvcore.traces import read_trace

    if router_dropped is not None:
        raise InputError(f"give --router or --routers, not both (--routers would replace "
                         f"--router {router_dropped})", field="router")
    copts = ClusterOptions(replicas=replicas,
                           routers=parse_router_opts(names, raw_opts, names_field), seed=seed,
                           metrics_interval_ms=metrics_interval_ms,
                           kv_event_lag_ms=kv_event_lag_ms)
    output.check_output(events, "events", folder=True)
    output.check_output(decisions, "decisions")
    if plot is not None:
        from kvcli.plots import require_matplotlib

        output.check_output(plot, "plot", folder=True)
        require_matplotlib()
    output.check_output(metrics, "metrics")
    streams = _planned_streams(events, names, replicas)
    from kvcli.plots import CLUSTER_CHART, chart_outputs

    output.check_distinct(ro.read_files(trace, opts),
                          [("decisions", decisions), ("metrics", metrics),
                           *(("events", p) for p in streams),
                           *chart_outputs(plot, [CLUSTER_CHART])],
                          folders=[("events", events), ("plot", plot)])
    from kvcore.live.options import LiveOptions

    live_opts = live_opts or LiveOptions()
    is_live = live_opts != LiveOptions() or metrics is not None
    if is_live:
        live_opts.check(replicas, metrics_file=metrics is not None)
        if len(names) > 1:
            raise InputError("a live cluster (published events, pace, metrics) runs one "
                             "router: its replicas are the engines subscribers see",
                             field="routers")
    if metrics == "-":
        raise InputError("a file path, not - (stdout carries the result)", field="metrics")
    if decisions == "-" or events == "-":
        raise InputError("a file path, not - (stdout carries the result)",
                         field="decisions" if decisions == "-" else "events")
    _ensure_open_files(events, len(streams), decisions, metrics, live_opts, replicas,
                       len(names))
    tr = read_trace(trace)
    made: list[str] = []    # the folders --events made, removed if the run fails (when empty)
    with contextlib.ExitStack() as stack:
        stack.callback(_remove_empty, made)

        def open_events(router: str, replica: int, kind: str):
            assert events is not None
            folder = os.path.join(events, router)
            for d in (events, folder):
                if not os.path.isdir(d):
                    os.makedirs(d)
                    made.append(d)
            path = os.path.join(folder, f"replica-{replica}.{kind}.jsonl")
            return stack.enter_context(output.open_output(path, field="events",
                                                          keep_on_interrupt=True))

        dec = None if decisions is None else stack.enter_context(
            output.open_output(decisions, field="decisions", keep_on_interrupt=True))
        live = None
        if is_live:
            from kvcli.live_run import open_live

            live = open_live(live_opts, None if metrics is None else stack.enter_context(
                output.open_output(metrics, field="metrics", keep_on_interrupt=True)),
                ranks=replicas)
        with output.progress(None, "cluster (requests routed)") as advance:
            result = run_cluster(trace, opts, copts,
                                 open_events=open_events if events else None,
                                 decisions_out=dec, warn=output.warn, trace=tr, live=live,
                                 progress=advance)
        made.clear()        # (the run is whole: its folders stay)
    if plot is not None:
        from kvcli.cluster_plots import write_cluster_plot

        for path in write_cluster_plot(result, plot):
            output.message(f"wrote {path}")
    output.emit(result_view(result), as_json=as_json)
    if any(r.get("interrupted") for r in result["routers"]):
        output.message("interrupted: the outputs hold what was replayed so far")
        return output.interrupt_code()
    from kvcli.live_run import linger_exit

    return linger_exit(live)


def _planned_streams(events: str | None, routers: list[str], replicas: int) -> list[str]:
    """The files `--events DIR` writes (a `--decisions` there replaced replica 0's stream);
    an `InputError` for a stream of an earlier run with more replicas, which `kvcli stats DIR`
    would read as this run's (a third replica of 42 requests beside two of 64)."""
    if events is None:
        return []
    from kvcli.cluster_stats import replica_number

    out = []
    for router in routers:
        folder = os.path.join(events, router)
        out += [os.path.join(folder, f"replica-{k}.{kind}.jsonl")
                for k in range(replicas) for kind in ("events", "vllm")]
        stale = sorted(f for f in (os.listdir(folder) if os.path.isdir(folder) else ())
                       if (k := replica_number(f)) is not None and k >= replicas)
        if stale:
            it = "it" if len(stale) == 1 else "them"
            raise InputError(f"{folder} holds {', '.join(stale)} of an earlier run with more "
                             f"replicas than this one's {replicas}: the folder would mix two "
                             f"runs' streams (kvcli stats DIR reads every replica-K.events.jsonl "
                             f"as one run's); remove {it} or write elsewhere", field="events")
    return out


def _ensure_open_files(events: str | None, streams: int, decisions: str | None,
                       metrics: str | None, live_opts, replicas: int, routers: int) -> None:
    """Room under the open-file limit for what the run holds open at once (`open_files.py`):
    every router's streams stay open until the run ends, beside the other outputs and the
    live publishers' sockets."""
    publishers = live_opts.open_files(replicas)
    if not streams and not publishers:
        return
    from kvcli.open_files import ensure_open_files

    files = streams + publishers + (decisions is not None) + (metrics is not None)
    if streams:
        s = "" if routers == 1 else "s"
        what = (f"{replicas:,} replicas x {routers} router{s} keep {streams:,} event files "
                "open until the run ends")
    else:
        what = f"{replicas:,} replicas' publishers hold {publishers:,} files open"
    ensure_open_files(files, "events" if streams else "kv_events_endpoint", what)


def _remove_empty(folders: list[str]) -> None:
    """A failed run's --events folders, newest first, each only if nothing is left in it
    (the event files themselves were never renamed into place)."""
    for d in reversed(folders):
        with contextlib.suppress(OSError):
            os.rmdir(d)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def _lat(r: dict, key: str, q: str) -> str:
    lat = r.get("latency")
    if not lat or lat[key].get(q) is None:
        return "-"
    return f"{lat[key][q] / 1000:.3f}"


def result_view(result: dict):
    from kvcli.output import Table, View

    rows = []
    for r in result["routers"]:
        rows.append((r["router"], _pct(r["hit_rate"]), _pct(r["trace_ceiling"]),
                     _pct(r["routed_ceiling"]), _pct(r["routing_loss"]),
                     _pct(r["capacity_loss"]), f"{r['duplication']:.3f}",
                     f"{r['balance']['requests']:.2f}",
                     f"{r['balance']['computed_prefill_tokens']:.2f}",
                     _lat(r, "ttft_ms", "p50"), _lat(r, "ttft_ms", "p99"), r["preemptions"]))
    tables = [Table(f"{result['replicas']} replicas: {result['trace']}",
                    ("router", "hit rate", "trace ceiling", "routed ceiling", "routing loss",
                     "capacity loss", "duplication", "max/mean requests",
                     "max/mean prefill", "TTFT p50 s", "TTFT p99 s", "preemptions"),
                    rows, caption="routing loss = trace ceiling - routed ceiling; capacity "
                    "loss = routed ceiling - hit rate (docs/cluster.md)")]
    for r in result["routers"]:
        tables.append(Table(f"{r['router']}: per replica",
                            ("replica", "requests", "prompt tokens", "hit tokens", "hit rate",
                             "computed prefill", "evictions", "preemptions", "peak usage"),
                            [(x["replica"], x["requests"], x["prompt_tokens"],
                              x["hit_tokens"], _pct(x["hit_rate"]),
                              x["computed_prefill_tokens"], x["evictions"], x["preemptions"],
                              _pct(x["peak_usage"])) for x in r["replicas"]]))
    return View(result, tables=tables)


def routers_view():
    from kvcli.output import Table, View
    from kvcore.cluster.router import REGISTRY, router_names

    rows = []
    data = {}
    for name in router_names():
        cls = REGISTRY[name]
        doc = sys.modules[cls.__module__].__doc__ or ""
        # the docstring's first paragraph, whole (its first line alone stopped mid-sentence)
        first = " ".join(doc.strip().split("\n\n")[0].split())
        opts = ", ".join(f"{k}={o.default}" for k, o in cls.OPTIONS.items()) or "-"
        rows.append((name, first, opts))
        data[name] = {"summary": first,
                      "options": {k: {"default": o.default, "help": o.help}
                                  for k, o in cls.OPTIONS.items()}}
    return View(data, tables=[Table("routers (--router NAME, --router-opt KEY=VALUE)",
                                    ("router", "rule", "options"), rows)])
