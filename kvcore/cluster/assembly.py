"""A router's cluster, built fresh for its run: N replicas (each with its event streams, the
router's forwarder of their vLLM events, a live run's sink), the router, the `ClusterLoop` over
them, and each replica's engine-loop listeners wired to the loop's hooks.
"""

from __future__ import annotations

from typing import IO, Any

from kvcore.cluster.loop import ClusterLoop, ReplicaEvents
from kvcore.cluster.options import ClusterOptions, OpenEvents
from kvcore.cluster.replica import Replica
from kvcore.cluster.router import make_router
from kvcore.engine.events import JsonlEvents
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import header
from kvcore.traces import Trace


def build_loop(trace: Trace, cfg: ReplayOptions, name: str, opts: dict, copts: ClusterOptions,
               needs_events: bool, open_events: OpenEvents | None,
               decisions_out: IO[bytes] | None, live: Any = None) -> ClusterLoop:
    """Router ``name``'s loop over ``copts.replicas`` fresh replicas (``opts``: its options);
    ``needs_events``: the router reads vLLM's KV events, so each replica forwards them."""
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
