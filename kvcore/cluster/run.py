"""`run_cluster(trace_path, options, cluster_options, ...)`: every router of the comparison on
the same trace, each with its own N fresh replicas; returns `{"routers": [...]}`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, Protocol

from kvcore.cluster.ceiling import ceiling_note
from kvcore.cluster.cost import long_run_note
from kvcore.cluster.loop import ClusterLoop, ReplicaEvents, check_replicas
from kvcore.cluster.replica import Replica
from kvcore.cluster.report import router_result
from kvcore.cluster.router import make_router
from kvcore.engine import hash_ahead
from kvcore.engine.events import JsonlEvents
from kvcore.engine.options import HOUR_MS, ReplayOptions, resolve
from kvcore.engine.replay import finish_outputs, header, summarize
from kvcore.engine.startup import StartUp, start_up
from kvcore.errors import InputError, LookupAssertion
from kvcore.gc_pause import gc_paused
from kvcore.host_memory import check_replicas_fit
from kvcore.interrupts import deferred
from kvcore.traces import Trace, read_trace
from kvcore.warning_groups import sources_named, warning_groups

MIN_METRICS_INTERVAL_MS = 0.001     # 1 us

# (router, replica, "events" | "vllm") -> the file to write that stream to
OpenEvents = Callable[[str, int, str], IO[bytes]]


class Progress(Protocol):
    """What `run_cluster` tells of its progress (`kvcli.progress_bar.Advance` is one)."""

    def __call__(self, n: int = 1) -> None: ...

    def total(self, n: int) -> None: ...


@dataclass(frozen=True, slots=True)
class ClusterOptions:
    replicas: int = 2
    routers: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (("round_robin", ()),)
    seed: int = 0
    metrics_interval_ms: float = 50.0   # llm-d's scrape interval
    kv_event_lag_ms: float = 0.0


def run_cluster(trace_path: str, options: ReplayOptions, copts: ClusterOptions, *,
                open_events: OpenEvents | None = None,
                decisions_out: IO[bytes] | None = None,
                warn: Callable[[str], None] | None = None,
                trace: Trace | None = None, live: Any = None,
                progress: Progress | None = None) -> dict:
    """`live` (a `kvcore.live.session.LiveRun` of `replicas` ranks): replica K publishes as
    vLLM's data-parallel rank K, paced, with its metrics (one router only); closed here.
    `progress` is told the runs' total of requests, then each one routed."""
    try:
        # (frozen at the end in a one-shot process: the collection that followed walked every
        # replica's objects, a second after a SIGTERM at 20,000 replicas)
        with gc_paused(freeze=True):
            return _run_cluster(trace_path, options, copts, open_events, decisions_out, warn,
                                trace, live, progress)
    except BaseException:
        if live is not None:
            live.close(final=False)
        raise


def _run_cluster(trace_path: str, options: ReplayOptions, copts: ClusterOptions,
                 open_events: OpenEvents | None, decisions_out: IO[bytes] | None,
                 warn: Callable[[str], None] | None, trace: Trace | None, live: Any,
                 progress: Progress | None) -> dict:
    check_cluster(copts, live)
    if trace is None:
        trace = read_trace(trace_path)
    cfg = resolve(options, trace.config, path=trace_path, config_line=trace.config_line)
    # every router's options and the N pools first: a typo fails before any replay runs
    start = start_up(trace, cfg)
    check_on_trace(cfg, copts, start)
    if live is not None:
        # (a refusal of the live run's metrics came once every replica was built: 40,000
        # replicas in cache mode took ~5 s to the one line)
        live.check_engines(start.cfg, trace, start.clock)
    n = copts.replicas
    made = [(name, dict(opts), make_router(name, n, dict(opts), copts.seed, 1))
            for name, opts in copts.routers]
    results = []
    warnings: list[str] = []

    def say(note: str) -> None:
        warnings.append(note)
        if warn is not None:
            warn(note)

    # The start-up warnings wait until the first router's replicas are built: a refusal made
    # while they are (a stream --events cannot open) stays one line, not a warning and then
    # the error. (The build takes ~0.3 ms a replica:
    # 6,000 took 1.7 s before the long-run note.)
    held = _idle_options(copts, made)
    long_run = long_run_note(n, len(made), trace, cfg, copts.metrics_interval_ms, start.clock)
    if progress is not None:
        progress.total(len(trace.requests) * len(made))
    effective = cfg
    for name, opts, probe in made:
        t0 = time.perf_counter()
        loop = _build(trace, cfg, name, opts, copts, probe.uses_events(), open_events,
                      decisions_out, live)
        for note in held:
            say(note)
        if long_run is not None and warn is not None:
            warn(long_run)  # (the run's cost, not a fact of its results: not in `warnings`)
        held, long_run = [], None
        loop.progress = progress
        # what each replica runs: num_blocks and max_model_len sized from a model, vLLM's
        # start-up scheduler defaults applied (as `kvcli replay` reports its `config`)
        effective = loop.replicas[0].ctx.cfg
        interrupted = False
        try:
            # every request is built by replica 0's context when routed, in arrival order: its
            # hasher takes the prompts' hashes from the thread (`kvcore/engine/hash_ahead.py`)
            with hash_ahead.running(loop.replicas[0].ctx.hasher, trace.held()):
                loop.run()
        except KeyboardInterrupt:
            interrupted = True
        except LookupAssertion:
            # (vLLM's assertion at the first lookup, said as the start-up foresaw it)
            if start.lookup_refusal is None:
                raise
            raise start.lookup_refusal from None
        # (a second Ctrl-C while 100 Mooncake replicas got their last records left the later
        # streams without one; held, it ends the command once every stream is whole)
        with deferred():
            for rep in loop.replicas:
                rep.ctx.summary.interrupted = interrupted
                summarize(rep.ctx, t0)
                finish_outputs(rep.ctx)
            if live is not None:        # (the metrics file's last snapshot, marked)
                live.end_outputs(max(rep.ctx.t_ms for rep in loop.replicas), interrupted)
        _warnings(name, loop, warnings, say)
        res = router_result(name, opts, loop, time.perf_counter() - t0)
        res["interrupted"] = interrupted
        if live is not None:
            res["live"] = live.close(max(rep.ctx.t_ms for rep in loop.replicas),
                                     interrupted=interrupted)
            warnings += live.said           # (said on stderr as they came)
        results.append(res)
        if interrupted:
            break
    if (ceiling := ceiling_note(start.groups)) is not None:
        say(ceiling)    # (after the runs: a run refused before its end has no capacity_loss)
    return {"trace": trace.label, "replicas": n, "seed": copts.seed,
            "metrics_interval_ms": copts.metrics_interval_ms,
            "kv_event_lag_ms": copts.kv_event_lag_ms, "config": effective.to_dict(),
            "routers": results, "warnings": warnings}


def check_cluster(copts: ClusterOptions, live: Any = None) -> None:
    """What a cluster refuses of its own options, before a trace is read (`kvcli sweep` checks
    every cluster job with it while it plans)."""
    check_replicas(copts.replicas)
    if live is not None and len(copts.routers) > 1:
        raise InputError("a live cluster (published events, pace, metrics) runs one router: "
                         "its replicas are the engines subscribers see", field="routers")
    for name in ("metrics_interval_ms", "kv_event_lag_ms"):
        v = getattr(copts, name)
        if not 0 <= v < math.inf:          # NaN fails too (it sampled nothing, silently)
            raise InputError(f"must be a finite number >= 0, got {v}", field=name)
        if v > HOUR_MS:
            # as the clock's step times: a lag of 1e308 ms was taken (no event ever reached the
            # index, said nowhere), and past 2**53 ms a delivery's time drops the step's
            # (1e20 + 1000.0 == 1e20)
            raise InputError(f"must be at most {HOUR_MS:,.0f} (an hour), got {v}", field=name)
    if 0 < copts.metrics_interval_ms < MIN_METRICS_INTERVAL_MS:
        # Sample times step by the interval: one too small to move the clock never returns.
        raise InputError(f"must be 0 (no samples) or at least {MIN_METRICS_INTERVAL_MS} ms, got "
                         f"{copts.metrics_interval_ms}", field="metrics_interval_ms")


def check_on_trace(cfg: ReplayOptions, copts: ClusterOptions, start: StartUp) -> None:
    """What a cluster refuses once its options are resolved on the trace (`start`: a replica's
    start-up): arrivals by step, a router's options (against the engines' hash block size, as
    the run makes the router), N pools this machine cannot hold."""
    if cfg.mode == "engine" and cfg.arrivals == "step":
        raise InputError("a cluster needs arrivals by timestamp (or ignore): replicas share "
                         "one clock, not step numbers", field="arrivals")
    for name, opts in copts.routers:
        make_router(name, copts.replicas, dict(opts), copts.seed, start.hash_block_size)
    # (one replica's pool size is every replica's: all N engines must fit this machine)
    check_replicas_fit(copts.replicas, start.cfg.num_blocks)     # type: ignore[arg-type]


def _build(trace: Trace, cfg: ReplayOptions, name: str, opts: dict, copts: ClusterOptions,
           needs_events: bool, open_events: OpenEvents | None,
           decisions_out: IO[bytes] | None, live: Any = None) -> ClusterLoop:
    n = copts.replicas
    replicas: list[Replica] = []
    sinks: list[ReplicaEvents | None] = []
    for i in range(n):
        jsonl = vllm_out = None
        if open_events is not None:
            jsonl = JsonlEvents(open_events(name, i, "events"))
            vllm_out = open_events(name, i, "vllm")
        fwd = (ReplicaEvents(vllm_out, i, None if live is None else live.sink(i, None))
               if vllm_out is not None or needs_events or live is not None else None)
        rep = Replica(i, trace, cfg, None, sink=jsonl, vllm_sink=fwd)
        if fwd is not None and vllm_out is None and live is None:
            # the router's index is the only reader of this replica's vLLM events
            rep.ctx.kvm.block_pool.lean_events = True
        replicas.append(rep)
        sinks.append(fwd)
    router = make_router(name, n, dict(opts), copts.seed, replicas[0].ctx.kvm.hash_block_size)
    loop = ClusterLoop(replicas, router, trace.held(),
                       metrics_interval_ms=copts.metrics_interval_ms,
                       kv_event_lag_ms=copts.kv_event_lag_ms, decisions_out=decisions_out)
    for rep, fwd in zip(replicas, sinks, strict=True):
        hooks = loop.hooks(rep.index)
        rep.ctx.listener = hooks
        if rep.loop is not None:
            rep.loop.listener = hooks
        if live is not None:
            em = live.attach(rep.index, rep.ctx, rep.loop)
            if em is not None and rep.loop is not None:
                rep.loop.listener = Both(hooks, em)
        if fwd is not None:
            fwd.run = loop
        header(rep.ctx)
    return loop


class Both:
    """Two engine-loop listeners (the router's hooks and a live run's metrics)."""

    __slots__ = ("a", "b")

    def __init__(self, a: Any, b: Any) -> None:
        self.a = a
        self.b = b

    def first_token(self, rid: str, t_ms: float) -> None:
        self.a.first_token(rid, t_ms)
        self.b.first_token(rid, t_ms)

    def finished(self, rid: str, t_ms: float) -> None:
        self.a.finished(rid, t_ms)
        self.b.finished(rid, t_ms)


def _idle_options(copts: ClusterOptions, made: list) -> list[str]:
    """The cluster options given that no chosen router reads (their runs were the same);
    ``made``: (name, the options given, the router) of each chosen router."""
    probes = [probe for _, _, probe in made]
    names = ", ".join(p.name for p in probes)
    out = []
    if copts.kv_event_lag_ms and not any(p.uses_events() for p in probes):
        # the lag delays the events an event-fed router reads: here none reads them
        out.append(f"option kv_event_lag_ms: no effect: no chosen router reads KV events "
                   f"({names})")
    default = ClusterOptions()
    if copts.metrics_interval_ms != default.metrics_interval_ms and not any(
            p.reads_metrics for p in probes):
        # (in cache mode too: samples are taken on the arrivals' timeline; vllm_dp's reset
        # its optimistic counts there)
        out.append(f"option metrics_interval_ms: no effect: no chosen router reads scraped "
                   f"metrics ({names})")
    if copts.seed != default.seed and not any(p.draws_random for p in probes):
        out.append(f"option seed: no effect: no chosen router draws at random ({names})")
    out += [note for p in probes for note in p.idle]
    if copts.replicas == 1 and (len(made) > 1 or any(given for _, given, _ in made)
                                or copts.seed != default.seed):
        out.append("the router, its options and seed change neither where requests go nor the "
                   "hits with 1 replica (only the routers' scores, predictions and decision "
                   "lines)")
    return out


def _warnings(router: str, loop: ClusterLoop, seen: list[str],
              say: Callable[[str], None]) -> None:
    """The replicas' warnings, each said once: plain when every replica said it or when it is
    a fact of the whole run (the clock's: every router and replica runs the same one, so
    `--routers a,b,c` says it once, not once a router), else with the router and the
    replicas that said it (1,000 replicas, 128 of them given a request, said the same line
    128 times)."""
    groups = warning_groups((i, r.ctx.summary.warnings) for i, r in enumerate(loop.replicas))
    n = len(loop.replicas)
    run_wide = loop.replicas[0].ctx.cost.uncalibrated_warning()
    lines = [w if len(ids) == n or w == run_wide
             else f"{router} {sources_named('replica', ids)}: {w}" for w, ids in groups]
    for w in lines:
        if w not in seen:
            say(w)
