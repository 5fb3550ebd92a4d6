"""The metrics file: the registry (`kvcore.live.metrics`) as Prometheus text exposition every
interval of simulated time (`Snapshots`), each snapshot stamped with that time, and the checks
that refuse, before the replay, a file of more snapshots than is sane (`decode_floor_ms`)."""

from __future__ import annotations

from typing import IO, Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest

from kvcore.errors import InputError

# The most snapshots a file gets up to the trace's last arrival for one engine
# (`Snapshots.check_span`; N replicas: a 1/N of it): each is ~30 KB of text an engine (31 of
# the shared-prefix sample's made 934 KB), and an idle gap gets one every interval all the same:
# two requests 10^12 ms apart wrote 10^8 snapshots at the default 10 s. 100,000 is ~3 GB.
MAX_SNAPSHOTS = 100_000
SNAPSHOT_BYTES = 30_000     # an engine's share of a snapshot (above), for the size said
# A file expected past this size is said before the replay: within the limit, 0.001 s over the
# sample wrote 2.2 GB with no word (0.01 s: 7,275 snapshots, 223 MB).
SAY_BYTES = 100_000_000


def decode_floor_ms(clock: Any, trace: Any, cfg: Any) -> float:
    """A floor on the simulated time a run reaches: each request decodes at least its output
    (to max_model_len at most) one token a step after its arrival, and no step is shorter than
    a lone one-token decode (async scheduling's batches queue on one GPU all the same). 0 where
    it cannot be a floor: a trace read as a stream (not held), requests skipped (`skip_bad`),
    or arrivals not on the clock."""
    from kvcore.clock.batch import StepBatch

    if cfg.skip_bad or cfg.arrivals not in ("timestamp", "ignore") \
            or not isinstance(trace.requests, list):
        return 0.0
    mml = cfg.max_model_len
    timed = cfg.arrivals == "timestamp"
    one = StepBatch()
    one.add(1, 2, False)
    step = clock.step_ms(one)
    # (the longest output and the longest prompt may be two requests: one long prompt beside
    # a 100,000-token output turned the floor off; a request runs to max_model_len at most)
    return max(((r.arrival_ms if timed else 0.0) + (tokens - 1) * step
                for r in trace.requests if mml is None or r.prompt_len < mml
                if (tokens := r.output_len if mml is None
                    else min(r.output_len, mml - r.prompt_len)) > 1), default=0.0)


class Snapshots:
    """The registry as text exposition every `interval_ms` of simulated time. Each snapshot
    starts with ``# kvcli snapshot sim_time_s=<t>`` and its samples carry the simulated time
    (ms) as their timestamp."""

    def __init__(self, out: IO[bytes], registry: CollectorRegistry, interval_ms: float) -> None:
        self.out = out
        self.registry = registry
        self.interval_ms = interval_ms
        self.next_ms = interval_ms
        self.last_ms: float | None = None
        self.count = 0

    def check_span(self, last_arrival_ms: float, engines: int = 1, *,
                   floor_ms: float = 0.0) -> str | None:
        """Refuse (before the replay) a file of more than `MAX_SNAPSHOTS` / `engines`
        snapshots up to the trace's last arrival, or up to `floor_ms` (a time the run cannot
        end before: `decode_floor_ms`), whichever is later (one request of 100,000 output
        tokens at 1 ms wrote 1.2 GB a minute until the run's own limit, 3 GB on). Returns what
        to say of a file expected past `SAY_BYTES` (None below)."""
        # (said as the decode's only where it adds snapshots to the last arrival's)
        tail = int(floor_ms // self.interval_ms) > int(last_arrival_ms // self.interval_ms)
        span = floor_ms if tail else last_arrival_ms
        n = int(span // self.interval_ms)
        limit = MAX_SNAPSHOTS // max(1, engines)
        upto = ("up to the end of a request's decode, at the earliest" if tail
                else "up to the trace's last arrival")
        if n > limit:
            of = "" if engines == 1 else f", {engines} engines"
            raise InputError(f"{n:,} snapshots {upto} ({span / 1000.0:,.0f} s of simulated "
                             f"time) is more than the limit of {limit:,} "
                             f"(~{SNAPSHOT_BYTES * engines // 1000} KB "
                             f"each{of}): raise it", field="metrics_interval_s")
        size = n * SNAPSHOT_BYTES * max(1, engines)
        if size < SAY_BYTES:
            return None
        return (f"metrics: at least {n:,} snapshots ({upto}), about {size / 1e6:,.0f} MB at "
                f"--metrics-interval-s {self.interval_ms / 1000.0:g} (a longer interval writes "
                "fewer)")

    def due(self, t_ms: float) -> None:
        """Write the snapshots due before `t_ms` (the registry holds the state before it); more
        than `MAX_SNAPSHOTS` in all is refused (a clock's hour-long steps: it wrote on for
        ever)."""
        if self.count + (t_ms - self.next_ms) / self.interval_ms > MAX_SNAPSHOTS:
            raise InputError(f"the replay ran to {t_ms / 1000.0:,.0f} s of simulated time: "
                             f"more than the limit of {MAX_SNAPSHOTS:,} snapshots (raise it)",
                             field="metrics_interval_s")
        while self.next_ms < t_ms:
            self.write(self.next_ms)
            self.next_ms += self.interval_ms

    def write(self, t_ms: float) -> None:
        stamp = b" %d" % round(t_ms)
        text = generate_latest(self.registry)
        lines = [line if line.startswith(b"#") or not line else line + stamp
                 for line in text.split(b"\n")]
        self.out.write(b"# kvcli snapshot sim_time_s=%.6f\n" % (t_ms / 1000.0)
                       + b"\n".join(lines))
        self.last_ms = t_ms
        self.count += 1

    def end(self, t_ms: float, interrupted: bool = False) -> None:
        """The last snapshot: the state at the end of the replay; an interrupted one's file
        ends with the comment ``# kvcli interrupted sim_time_s=T`` (as the event files end
        with their `interrupted` record; parsers skip comments)."""
        self.due(t_ms)
        if self.last_ms != t_ms:
            self.write(t_ms)
        if interrupted:
            self.out.write(f"# kvcli interrupted sim_time_s={t_ms / 1000.0:.6f}\n".encode())
