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

from kvcore.clock.base import Clock
from kvcore.engine.options import ReplayOptions
from kvcore.traces import Trace, TraceRequest

# Replica visits past which the run is said to be long: half a minute at `US_PER_VISIT`.
SAY_VISITS = 10_000_000
# Measured on traces/multiturn-chat.jsonl (294 requests; 1,454 samples counted at the default
# 50 ms, 1,393 taken: the loop skips a sample no event follows), pure-Python stack: 4,000
# replicas ran 11.5 s (7.0 million visits counted so; 6.9 million when samples were counted to
# the last arrival only), 40,000 in cache mode without samples 41 s (11.8 million): 1.6 and
# 3.5 µs a visit.
US_PER_VISIT = 3.0


def replica_visits(replicas: int, routers: int, trace: Trace, cfg: ReplayOptions,
                   metrics_interval_ms: float, clock: Clock) -> tuple[int, int]:
    """(replica visits, metrics samples) of a run: every router's run visits every replica once
    a request and once a sample. Samples are due every interval until the run's last event
    (the loop samples in engine mode whatever the arrivals, to the last step: `run_end_ms`),
    but the loop takes one only when an event follows it (an arrival, a delivery, a step: at
    most a step a token, and an arrival, a first token and a finish a request), so at most that
    many: a trace spanning 10^9 s is not 2 x 10^10 samples."""
    requests = trace.held()
    samples = 0
    if metrics_interval_ms > 0 and requests:
        due = math.floor(run_end_ms(requests, cfg, clock) / metrics_interval_ms) + 1
        events = 3 * len(requests) + (
            sum(tr.output_len for tr in requests) if cfg.mode == "engine" else 0)
        samples = min(due, events)
    return replicas * routers * (len(requests) + samples), samples


def run_end_ms(requests: list[TraceRequest], cfg: ReplayOptions, clock: Clock) -> float:
    """When a run ends at the earliest: cache mode at the last arrival; engine mode when the
    request that takes longest alone finishes, from its arrival (all at 0 with arrivals=ignore)
    through its decode steps, each at least the clock's step of that one request (taken at its
    mean context). One request of 100,000 output tokens: 524,995 ms (10,500 samples, as many
    as the run takes), where the last arrival alone counted 1. Queueing makes a loaded run
    longer: traces/multiturn-chat.jsonl on 4 replicas, 72,665 ms (1,454 samples; the run took
    1,393, the last at 72,854 ms), but with arrivals=ignore 2,294 ms (46; the run took 547)."""
    if cfg.mode == "cache":
        return max(tr.arrival_ms for tr in requests)
    timed = cfg.arrivals == "timestamp"
    # (a lower bound first, one clock call; then the clock at the mean context for the longest)
    one = clock.decode_ms(1, 0)
    last = max(requests, key=lambda tr: (tr.arrival_ms if timed else 0.0)
               + (tr.output_len - 1) * one)
    end = (last.arrival_ms if timed else 0.0) + (last.output_len - 1) * clock.decode_ms(
        1, last.prompt_len + last.output_len // 2)
    return max(end, max(tr.arrival_ms for tr in requests) if timed else 0.0)


def long_run_note(replicas: int, routers: int, trace: Trace, cfg: ReplayOptions,
                  metrics_interval_ms: float, clock: Clock) -> str | None:
    """The warning a run of more than `SAY_VISITS` replica visits gets before it starts (None:
    a shorter run)."""
    visits, samples = replica_visits(replicas, routers, trace, cfg, metrics_interval_ms, clock)
    if visits <= SAY_VISITS:
        return None
    minutes = visits * US_PER_VISIT / 60e6
    took = "a minute" if minutes < 1.5 else f"{minutes:,.0f} minutes"
    of = f" (for each of the {routers} routers)" if routers > 1 else ""
    sampled = (f", and each of ~{samples:,} metrics samples reads every replica"
               if samples else "")
    return (f"option replicas: {replicas:,} replicas make a long run: each of the "
            f"{len(trace.requests):,} requests is routed against every replica{sampled}{of}: "
            f"~{visits:,} replica visits, on the order of {took} at ~{US_PER_VISIT:g} µs a "
            f"visit (fewer replicas run faster)")
