"""What a cluster refuses before it builds a replica: its own options (before a trace is read)
and, once they are resolved on the trace, arrivals by step, a router's options and N pools this
machine cannot hold. `kvcli sweep` checks every cluster job with both while it plans.
"""

from __future__ import annotations

import math
from typing import Any

from kvcore.cluster.loop import check_replicas
from kvcore.cluster.options import ClusterOptions
from kvcore.cluster.router import make_router
from kvcore.engine.options import HOUR_MS, ReplayOptions
from kvcore.engine.startup import StartUp
from kvcore.errors import InputError
from kvcore.host_memory import check_replicas_fit

MIN_METRICS_INTERVAL_MS = 0.001     # 1 us


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
