"""vLLM's Prometheus metrics of a replay, built with `prometheus_client` (the library vLLM uses)
in a registry of the replay's own (`metric_defs.py` lists them).

`Families` creates the metrics once per registry; `EngineMetrics` is one engine's children
(labels ``model_name``, ``engine``) and its bookkeeping: after every step it reads the replay's
cumulative counts (the manager's `PrefixCacheStats`, the CPU tier's connector stats and bytes,
the summary's preemptions) and the scheduler's queues, and it observes a request's latencies
when the engine loop reports its first token and its finish (`first_token`, `finished`: the
loop's listener). Observations wait for the step's `update`, so that a snapshot due before
the step does not see them. `kvcore.live.snapshots` writes the registry as text exposition
every interval of simulated time, each stamped with that time.

Where vLLM observes per token (inter-token latency), the replay knows a request's decode only
as a whole (decode windows, the fast-forward): it observes the request's mean inter-token
time once per inter-token gap, so the count and the sum are vLLM's, the spread is not. Tokens
are counted when a request's first token comes (prompt) and when it finishes (generation).
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kvcore.live.metric_defs import (
    ENGINE_LABELS,
    FAMILIES,
    FINISH_REASONS,
    METRICS,
    MFU_METRICS,
    OFFLOAD_METRICS,
    SPEC_METRICS,
    SPEC_PER_POS,
    STORES_SKIPPED,
    request_tokens_buckets,
)


class Families:
    """``offload``: the CPU tier's config (None: no tier, none of its metrics)."""

    def __init__(self, registry: CollectorRegistry, max_model_len: int, offload: Any,
                 spec_tokens: int = 0) -> None:
        self.registry = registry
        self.by_name: dict[str, Any] = {}
        tier = () if offload is None else OFFLOAD_METRICS + (
            (STORES_SKIPPED,) if offload.store_threshold >= 2 else ())
        spec = SPEC_METRICS if spec_tokens else ()
        self.spec_tokens = spec_tokens
        for name, kind, doc, extra, family in spec + METRICS + tier + MFU_METRICS:
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
                             if name not in ("vllm:request_success", SPEC_PER_POS)
                             and not name.startswith("vllm:kv_offload_")}
        self.m = m
        self.success = {r: fam.by_name["vllm:request_success"].labels(*lv, r)
                        for r in FINISH_REASONS}
        self.fam = fam
        self.lv = lv
        self.per_pos = [fam.by_name[SPEC_PER_POS].labels(*lv, str(i))
                        for i in range(fam.spec_tokens)]
        self.per_pos_seen = [0] * fam.spec_tokens
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
        if self.per_pos and sched is not None:
            self._spec(sched.spec_stats)
        if sched is not None:
            m["vllm:num_requests_running"].set(len(sched.running))
            m["vllm:num_requests_waiting"].set(len(sched.waiting))
        m["vllm:kv_cache_usage_perc"].set(ctx.kvm.block_pool.get_usage())
        if self.pending:
            pending, self.pending = self.pending, []
            for kind, rid in pending:
                self._observe(kind, ctx.records[rid])

    def _spec(self, st: Any) -> None:
        """vLLM's spec-decoding counters, from the scheduler's `SpecStats`."""
        self._add("vllm:spec_decode_num_drafts", st.num_drafts)
        self._add("vllm:spec_decode_num_draft_tokens", st.num_draft_tokens)
        self._add("vllm:spec_decode_num_accepted_tokens", st.num_accepted_tokens)
        seen = self.per_pos_seen
        for i, n in enumerate(st.accepted_per_pos):
            if n > seen[i]:
                self.per_pos[i].inc(n - seen[i])
                seen[i] = n

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
