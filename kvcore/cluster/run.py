"""`run_cluster(trace_path, options, cluster_options, ...)`: every router of the comparison on
the same trace, each with its own N fresh replicas; returns `{"routers": [...]}`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import IO, Any

from kvcore.cluster.assembly import build_loop
from kvcore.cluster.ceiling import ceiling_note
from kvcore.cluster.checks import check_cluster, check_on_trace
from kvcore.cluster.cost import long_run_note
from kvcore.cluster.options import ClusterOptions, OpenEvents, Progress
from kvcore.cluster.report import router_result
from kvcore.cluster.router import make_router
from kvcore.cluster.run_notes import idle_options, replica_warnings
from kvcore.engine import hash_ahead
from kvcore.engine.options import ReplayOptions, resolve
from kvcore.engine.replay import finish_outputs, summarize
from kvcore.engine.startup import start_up
from kvcore.errors import LookupAssertion
from kvcore.gc_pause import gc_paused
from kvcore.interrupts import deferred
from kvcore.traces import Trace, read_trace

# (ClusterOptions lives in options.py; a caller running a cluster may take both from here)
__all__ = ["ClusterOptions", "run_cluster"]


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
    held = idle_options(copts, made)
    long_run = long_run_note(n, len(made), trace, cfg, copts.metrics_interval_ms, start.clock)
    if progress is not None:
        progress.total(len(trace.requests) * len(made))
    effective = cfg
    for name, opts, probe in made:
        t0 = time.perf_counter()
        loop = build_loop(trace, cfg, name, opts, copts, probe.uses_events(), open_events,
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
        replica_warnings(name, loop, warnings, say)
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
