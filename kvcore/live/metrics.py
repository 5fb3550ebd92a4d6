"""vLLM's Prometheus metrics of a replay, built with `prometheus_client` (the library vLLM uses)
in a registry of the replay's own (`metric_defs.py` lists them).

`Families` creates the metrics once per registry; `EngineMetrics` is one engine's children
(labels ``model_name``, ``engine``) and its bookkeeping: after every step it reads the replay's
cumulative counts (the manager's `PrefixCacheStats`, the CPU tier's connector stats and bytes,
the summary's preemptions) and the scheduler's queues, and it observes a request's latencies
when the engine loop reports its first token and its finish (`first_token`, `finished`: the
loop's listener). Observations wait for the step's `update`, so that a snapshot due before
the step does not see them. `Snapshots` writes the registry as text exposition every interval
of simulated time, each stamped with that time.

Where vLLM observes per token (inter-token latency), the replay knows a request's decode only
as a whole (decode windows, the fast-forward): it observes the request's mean inter-token
time once per inter-token gap, so the count and the sum are vLLM's, the spread is not. Tokens
are counted when a request's first token comes (prompt) and when it finishes (generation).
"""

from __future__ import annotations

from typing import IO, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

from kvcore.errors import InputError
from kvcore.live.metric_defs import (
    ENGINE_LABELS,
    FAMILIES,
    FINISH_REASONS,
    METRICS,
    MFU_METRICS,
    OFFLOAD_METRICS,
    STORES_SKIPPED,
    request_tokens_buckets,
)


class Families:
    """``offload``: the CPU tier's config (None: no tier, none of its metrics)."""

    def __init__(self, registry: CollectorRegistry, max_model_len: int, offload: Any) -> None:
        self.registry = registry
        self.by_name: dict[str, Any] = {}
        tier = () if offload is None else OFFLOAD_METRICS + (
            (STORES_SKIPPED,) if offload.store_threshold >= 2 else ())
        for name, kind, doc, extra, family in METRICS + tier + MFU_METRICS:
            labels = list(ENGINE_LABELS + extra)
            if kind == "gauge":
                m: Any = Gauge(name, doc, labels, registry=registry,
                               multiprocess_mode="mostrecent")
            elif kind == "counter":
                m = Counter(name, doc, labels, registry=registry)
            else:
                buckets = (request_tokens_buckets(max_model_len) if family == "request_tokens"
                           else FAMILIES[family])    # type: ignore[index]
                m = Histogram(name, doc, labels, registry=registry, buckets=buckets)
            self.by_name[name] = m
        self.offload = offload is not None


def observe_many(hist: Any, value: float, n: int) -> None:
    """`n` observations of `value` at once (prometheus_client's child internals, else a loop)."""
    if n <= 0:
        return
    buckets, bounds, total = (getattr(hist, a, None) for a in ("_buckets", "_upper_bounds",
                                                                 "_sum"))
    if buckets is None or bounds is None or total is None:
        for _ in range(n):
            hist.observe(value)
        return
    total.inc(value * n)
    for i, bound in enumerate(bounds):
        if value <= bound:
            buckets[i].inc(n)
            break


class EngineMetrics:
    """One engine's (replay's, replica's) metrics."""

    def __init__(self, fam: Families, model_name: str, engine: int) -> None:
        lv = (model_name, str(engine))
        # (the CPU tier's: `OffloadMetrics`, which makes each series when vLLM would)
        m: dict[str, Any] = {name: metric.labels(*lv) for name, metric in fam.by_name.items()
                             if name != "vllm:request_success"
                             and not name.startswith("vllm:kv_offload_")}
        self.m = m
        self.success = {r: fam.by_name["vllm:request_success"].labels(*lv, r)
                        for r in FINISH_REASONS}
        self.fam = fam
        self.lv = lv
        self.offload: Any = None
        self.seen: dict[str, float] = {}        # cumulative counts already added
        self.pending: list[tuple[str, str]] = []     # ("first" | "finish", request id)
        self.ctx: Any = None
        self.sched: Any = None

    def attach(self, ctx: Any, sched: Any) -> None:
        self.ctx = ctx
        self.sched = sched
        if self.fam.offload and ctx.tier is not None:
            from kvcore.live.offload_metrics import OffloadMetrics

            self.offload = OffloadMetrics(self.fam.by_name, self.lv, ctx)

    # -- the engine loop's listener ------------------------------------------------------------
    def first_token(self, rid: str, t_ms: float) -> None:
        self.pending.append(("first", rid))

    def finished(self, rid: str, t_ms: float) -> None:
        self.pending.append(("finish", rid))

    # -- after each step -----------------------------------------------------------------------
    def _add(self, name: str, total: float) -> None:
        delta = total - self.seen.get(name, 0)
        if delta > 0:
            self.m[name].inc(delta)
            self.seen[name] = total

    def update(self) -> None:
        ctx = self.ctx
        if ctx is None:
            return
        m = self.m
        st = ctx.kvm.prefix_cache_stats
        if st is not None:
            self._add("vllm:prefix_cache_queries", st.queries)
            self._add("vllm:prefix_cache_hits", st.hits)
        tier = ctx.tier
        if tier is not None:
            c = tier.stats.counts
            self._add("vllm:external_prefix_cache_queries", c.queries)
            self._add("vllm:external_prefix_cache_hits", c.hits)
        if self.offload is not None:
            self.offload.update()
        self._add("vllm:num_preemptions", ctx.summary.preemptions)
        sched = self.sched
        if sched is not None:
            m["vllm:num_requests_running"].set(len(sched.running))
            m["vllm:num_requests_waiting"].set(len(sched.waiting))
        m["vllm:kv_cache_usage_perc"].set(ctx.kvm.block_pool.get_usage())
        if self.pending:
            pending, self.pending = self.pending, []
            for kind, rid in pending:
                self._observe(kind, ctx.records[rid])

    def _observe(self, kind: str, rec: Any) -> None:
        m = self.m
        if kind == "first":
            m["vllm:prompt_tokens"].inc(rec.tr.prompt_len)
            if rec.latency_from_ms is not None and rec.first_token_ms is not None:
                m["vllm:time_to_first_token_seconds"].observe(
                    (rec.first_token_ms - rec.latency_from_ms) / 1000.0)
            return
        out = rec.generated or 0
        m["vllm:generation_tokens"].inc(out)
        self.success["length"].inc()       # every replayed request ends at its output length
        m["vllm:request_prompt_tokens"].observe(rec.tr.prompt_len)
        m["vllm:request_generation_tokens"].observe(out)
        m["vllm:request_num_preemptions"].observe(rec.preemptions)
        t0, sched_ms = rec.latency_from_ms, rec.first_scheduled_ms
        first, end = rec.first_token_ms, rec.finish_ms
        if t0 is None or sched_ms is None or first is None or end is None:
            return
        decode = (end - first) / 1000.0
        tpot = decode / (out - 1) if out > 1 else 0.0
        m["vllm:e2e_request_latency_seconds"].observe((end - t0) / 1000.0)
        # vLLM's queued time starts when the engine core adds the request (between steps:
        # `arrival_ms`, its intake), not at its arrival: the step in progress is not counted
        intake = rec.arrival_ms if rec.arrival_ms is not None else t0
        m["vllm:request_queue_time_seconds"].observe((sched_ms - intake) / 1000.0)
        m["vllm:request_prefill_time_seconds"].observe((first - sched_ms) / 1000.0)
        m["vllm:request_decode_time_seconds"].observe(decode)
        m["vllm:request_inference_time_seconds"].observe((end - sched_ms) / 1000.0)
        m["vllm:request_time_per_output_token_seconds"].observe(tpot)
        observe_many(m["vllm:inter_token_latency_seconds"], tpot, out - 1)


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
