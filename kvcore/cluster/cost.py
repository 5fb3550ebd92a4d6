"""What a cluster's size costs in work, said before a run long enough to look hung.

A cluster's work grows with its replicas times its events, not with its requests alone: each
routed request asks every replica its true hit (the report's ground truth), each metrics sample
scrapes every replica, and each turn of the loop picks the replica stepping next among all. On
`traces/multiturn-chat.jsonl` 4,000 replicas took 11.5 s, and 100,000 ran for many minutes
without a word (and 2.8 GB: `kvcli cluster --replicas 100000 --num-blocks 128`).
The memory the replicas take is refused beforehand (`kvcore.host_memory.check_replicas_fit`);
this is the time, which no limit fits (a long run may be meant), so it is only said.
"""

from __future__ import annotations

import math

from kvcore.engine.options import ReplayOptions
from kvcore.traces import Trace

# Replica visits past which the run is said to be long: half a minute at `US_PER_VISIT`.
SAY_VISITS = 10_000_000
# Measured on traces/multiturn-chat.jsonl (294 requests; up to 1,424 samples at the default 50
# ms, fewer taken: the loop skips a sample no event follows), pure-Python stack: 4,000 replicas
# ran 11.5 s (6.9 million visits counted so), 40,000 in cache mode without samples 41 s (11.8
# million): 1.7 and 3.5 µs a visit.
US_PER_VISIT = 3.0


def replica_visits(replicas: int, routers: int, trace: Trace, cfg: ReplayOptions,
                   metrics_interval_ms: float) -> tuple[int, int]:
    """(replica visits, metrics samples) of a run: every router's run visits every replica once
    a request and once a sample. Samples are due every interval up to the trace's last arrival,
    but the loop takes one only when an event follows it (an arrival, a delivery, a step: at
    most a step a token, and an arrival, a first token and a finish a request), so at most that
    many: a trace spanning 10^9 s is not 2 x 10^10 samples."""
    requests = trace.held()
    samples = 0
    if metrics_interval_ms > 0 and requests and (
            cfg.mode == "cache" or cfg.arrivals == "timestamp"):
        due = math.floor(max(tr.arrival_ms for tr in requests) / metrics_interval_ms) + 1
        events = 3 * len(requests) + (
            sum(tr.output_len for tr in requests) if cfg.mode == "engine" else 0)
        samples = min(due, events)
    return replicas * routers * (len(requests) + samples), samples


def long_run_note(replicas: int, routers: int, trace: Trace, cfg: ReplayOptions,
                  metrics_interval_ms: float) -> str | None:
    """The warning a run of more than `SAY_VISITS` replica visits gets before it starts (None:
    a shorter run)."""
    visits, samples = replica_visits(replicas, routers, trace, cfg, metrics_interval_ms)
    if visits <= SAY_VISITS:
        return None
    minutes = visits * US_PER_VISIT / 60e6
    took = "a minute" if minutes < 1.5 else f"{minutes:,.0f} minutes"
    of = f" (for each of the {routers} routers)" if routers > 1 else ""
    sampled = (f", and each of up to {samples:,} metrics samples reads every replica"
               if samples else "")
    return (f"option replicas: {replicas:,} replicas make a long run: each of the "
            f"{len(trace.requests):,} requests is routed against every replica{sampled}{of}: "
            f"~{visits:,} replica visits, on the order of {took} at ~{US_PER_VISIT:g} µs a "
            f"visit (fewer replicas run faster)")
