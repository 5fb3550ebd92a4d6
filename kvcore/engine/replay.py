"""Replay a trace through kvcore: `replay(trace_path, options, sink) -> ReplaySummary`.

Two modes share one `KVCacheManager`:

* engine (default): vLLM's scheduler step by step (`kvcore.engine.scheduler`). Requests arrive by
  their timestamps on a simulated clock (`--arrivals timestamp`; the cost model in `cost.py` says
  how long a step takes), all at once (`ignore`), or at their integer `arrival_step` (`step`,
  steps count from 0 and idle steps count, as the scheduler oracle does). A fake model samples one
  token per request that reached the end of its known tokens (`TraceRequest.output_token`).
* cache: one request at a time in arrival order: look up, allocate the whole prompt, free. The
  pure prefix-cache model papers and peer tools report (the cache-mode oracle).

Hit rates count every request at its first admission, past the warm-up (`--warmup F` leaves the
first fraction out), as vLLM's prefix-cache stats do. Outputs stream as they happen: the event
sink (ours or vLLM's), `--steps` lines and, at the end, `--requests` lines. Ctrl-C ends the replay
cleanly: what was written ends with an `interrupted` record and the summary says so.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

import orjson

from kvcore.engine.cost import CostModel
from kvcore.engine.events import JsonlEvents, Recorder, VllmEvents, _ints
from kvcore.engine.options import ENGINE_NUM_BLOCKS, EffectiveConfig, ReplayOptions, resolve
from kvcore.engine.results import ReplaySummary
from kvcore.engine.scheduler import NO_MODEL_LEN_LIMIT, Scheduler, SchedulerConfig
from kvcore.errors import InputError
from kvcore.request import LoRARequest, Request
from kvcore.specs import cdiv
from kvcore.traces import Trace, TraceRequest, read_trace

__all__ = ["ReplayOptions", "ReplaySummary", "replay"]


@dataclass(slots=True)
class _Info:
    """Per-request bookkeeping for `--requests` and the hit statistics."""

    tr: TraceRequest
    pos: int                        # position in arrival order (warm-up cut)
    arrival_ms: float = 0.0
    hit_tokens: int | None = None   # at first admission
    preemptions: int = 0
    first_scheduled_step: int | None = None
    first_token_ms: float | None = None
    finish_step: int | None = None
    finish_ms: float | None = None
    rejected: str | None = None

    def line(self) -> dict:
        tr = self.tr
        return {"id": tr.id, "arrival": round(self.arrival_ms, 6), "arrival_step": tr.arrival_step,
                "prompt_tokens": tr.prompt_len, "output_tokens": tr.output_len,
                "hit_tokens": self.hit_tokens, "preemptions": self.preemptions,
                "first_scheduled_step": self.first_scheduled_step,
                "finish_step": self.finish_step,
                "first_token_ms": None if self.first_token_ms is None
                else round(self.first_token_ms, 6),
                "finish_ms": None if self.finish_ms is None else round(self.finish_ms, 6),
                "rejected": self.rejected}


def replay(trace_path: str, options: ReplayOptions, sink: JsonlEvents | VllmEvents | None = None,
           *, steps_out: IO[bytes] | None = None, requests_out: IO[bytes] | None = None,
           progress: Callable[[int], None] | None = None,
           warn: Callable[[str], None] | None = None, trace: Trace | None = None
           ) -> ReplaySummary:
    """Replay `trace_path` (or an already read `trace`) and return the summary.

    `sink` receives the event stream; `steps_out` / `requests_out` get JSON lines (binary files).
    Bad input raises `InputError`; Ctrl-C returns a summary with `interrupted=True` after ending
    every output with an `interrupted` record.
    """
    if trace is None:
        trace = read_trace(trace_path)
    cfg = resolve(options, trace.config, path=trace_path, config_line=trace.config_line)
    run = _Replay(trace, cfg, sink, steps_out, requests_out, progress, warn)
    return run.run()


class _Replay:
    def __init__(self, trace: Trace, cfg: EffectiveConfig, sink, steps_out, requests_out,
                 progress, warn) -> None:
        self.trace = trace
        self.cfg = cfg
        self.sink = sink
        self.jsonl = sink if isinstance(sink, JsonlEvents) else None
        self.vllm = sink if isinstance(sink, VllmEvents) else None
        self.steps_out = steps_out
        self.requests_out = requests_out
        self.progress = progress or (lambda n=1: None)
        self.warn = warn or (lambda msg: None)
        self.cost = CostModel(cfg.step_overhead_ms, cfg.prefill_ms_per_token,
                              cfg.decode_ms_per_seq)
        bs = cfg.block_size
        self.model_groups = self._model_groups() if (cfg.model or cfg.model_config) else None
        n_groups = len(self.model_groups) if self.model_groups else 1
        if cfg.num_blocks is None:
            if cfg.mode == "cache":
                # Room for every block of every prompt (in every group), plus the null block
                # and one spare (as the cache-mode oracle sizes "infinite").
                cfg.num_blocks = n_groups * sum(cdiv(r.prompt_len, bs)
                                                for r in trace.requests) + 2
            else:
                cfg.num_blocks = ENGINE_NUM_BLOCKS
        self.num_blocks = cfg.num_blocks
        self.max_model_len = cfg.max_model_len
        self.summary = ReplaySummary(trace=trace.path, format=trace.format, mode=cfg.mode,
                                     requests=len(trace.requests), num_blocks=cfg.num_blocks,
                                     block_size=bs, config=cfg.to_dict())
        self.infos: dict[str, _Info] = {}
        self.warmup_start = int(len(trace.requests) * cfg.warmup)
        self.step = 0
        self.t_ms = 0.0
        self.request_hit_sum = 0.0
        # LoRA adapters get ids 1, 2, 3, ... in order of first appearance in the trace file (a
        # stable `lora_int_id`, which vLLM's BlockStored events carry as `lora_id`).
        self.lora_ids: dict[str, int] = {}
        for r in sorted(trace.requests, key=lambda r: r.index):
            if r.lora is not None and r.lora not in self.lora_ids:
                self.lora_ids[r.lora] = len(self.lora_ids) + 1
        self._build_manager()

    # -- setup -------------------------------------------------------------------------------
    def _build_manager(self) -> None:
        from kvcore.engine.hash_memo import TraceBlockHasher
        from kvcore.kv_cache_manager import KVCacheManager
        from kvcore.specs import FullAttentionSpec, KVCacheGroupSpec

        cfg = self.cfg
        bs = cfg.block_size
        groups = self.model_groups or [KVCacheGroupSpec(("layer",),
                                                         FullAttentionSpec(block_size=bs))]
        self.groups = [{"type": _group_type(g.kv_cache_spec),
                        "block_size": g.kv_cache_spec.block_size,
                        "sliding_window": getattr(g.kv_cache_spec, "sliding_window", None)}
                       for g in groups]
        self.all_full = all(isinstance(g.kv_cache_spec, FullAttentionSpec) for g in groups)
        max_len = cfg.max_model_len or NO_MODEL_LEN_LIMIT
        self.recorder = Recorder(self.jsonl, None, self.num_blocks - 1)
        self.recorder.is_counted = self._is_counted
        if self.jsonl is not None:
            self.recorder.admit_extra = self._admit_extra
        self.kvm = KVCacheManager(
            groups, max_len, num_blocks=self.num_blocks, enable_caching=cfg.enable_prefix_caching, log_stats=True,
            enable_kv_cache_events=self.vllm is not None,
            max_in_flight_tokens=cfg.max_num_batched_tokens, watermark=cfg.watermark,
            tracer=self.recorder)
        self.recorder.pool = self.kvm.block_pool
        self.hash_block_size = self.kvm.hash_block_size
        self.hasher = (TraceBlockHasher(self.hash_block_size, cfg.hash_algo)
                       if cfg.enable_prefix_caching else None)

    def _model_groups(self) -> list:
        """The KV cache groups of `--model` / `--model-config` (the sizing layer); it also sizes
        `num_blocks` when `--gpu-memory-gib` is given, and `max_model_len` when not given."""
        from kvcore.sizing.resolve import resolve_kv_cache_config

        cfg = self.cfg
        num_blocks = cfg.num_blocks
        if num_blocks is None and cfg.gpu_memory_gib is None and cfg.mode == "engine":
            num_blocks = ENGINE_NUM_BLOCKS
        res = resolve_kv_cache_config(
            cfg.model, model_config=cfg.model_config, gpu_memory_gib=cfg.gpu_memory_gib,
            block_size=cfg.block_size, max_model_len=cfg.max_model_len,
            max_num_batched_tokens=cfg.max_num_batched_tokens, max_concurrent_batches=1,
            num_blocks=num_blocks, enable_prefix_caching=cfg.enable_prefix_caching,
            check_memory=False)
        if cfg.max_model_len is None:
            cfg.max_model_len = res.ctx.max_model_len
        if cfg.num_blocks is None and (cfg.gpu_memory_gib is not None or cfg.mode == "engine"):
            cfg.num_blocks = res.config.num_blocks
        return list(res.config.kv_cache_groups)

    def _is_counted(self, req: Request, resumed: bool) -> bool:
        return not resumed and self.infos[req.request_id].pos >= self.warmup_start

    def _admit_extra(self, req: Request) -> dict:
        # The hashes of the prompt's full blocks (not capped by the last-token rule), so a
        # consumer can attribute misses; see docs/events.md.
        hbs = self.hash_block_size
        tr = self.infos[req.request_id].tr
        domain = None
        if tr.lora is not None or tr.cache_salt is not None:
            domain = ";".join(p for p in (f"lora={tr.lora}" if tr.lora is not None else "",
                                          f"salt={tr.cache_salt}" if tr.cache_salt is not None
                                          else "") if p)
        n_prompt = req.num_prompt_tokens
        hashes = _ints(req.block_hashes[:n_prompt // hbs])
        # The first token of every prompt block (the partial tail included): with the hash of
        # the block before, it keys "a shared prefix that ends inside this block".
        first = req.all_token_ids[0:n_prompt:hbs]
        # Per group at the group's block size; groups hashed at a coarser size give null.
        same = [g["block_size"] == hbs for g in self.groups]
        out = {"prompt_hashes": [hashes if x else None for x in same],
               "hash_domain": domain,
               "first_tokens": [first if x else None for x in same]}
        if domain is not None and self.hasher is not None:
            # The same blocks with no LoRA / salt (no extra keys): lets a consumer tell "cached
            # in another hash domain" from "never seen".
            plain = Request(req.request_id, tr.prompt_tokens()[:n_prompt - n_prompt % hbs],
                            self.hasher)
            content = _ints(plain.block_hashes)
            out["content_hashes"] = [content if x else None for x in same]
        return out

    def _header(self) -> None:
        if self.jsonl is not None:
            cfg = self.cfg
            self.jsonl.header({"mode": cfg.mode, "block_size": cfg.block_size,
                               "num_blocks": self.num_blocks, "groups": self.groups,
                               "warmup": cfg.warmup, "trace": self.trace.path,
                               "format": self.trace.format, "config": cfg.to_dict()})

    def _make_request(self, tr: TraceRequest, add_order: int) -> Request:
        lora = None
        if tr.lora is not None:
            lora = LoRARequest(tr.lora, self.lora_ids[tr.lora])
        if self.hasher is not None:
            self.hasher.pending = tr     # its prompt hashes may come from the trace-block table
        return Request(tr.id, tr.prompt_tokens(), self.hasher, arrival_time=float(add_order),
                       priority=tr.priority, max_tokens=tr.output_len, lora_request=lora,
                       cache_salt=tr.cache_salt)

    def _never_fits(self, tr: TraceRequest) -> str | None:
        """Why `tr` can never run (None if it can). Engine: its longest computed sequence must
        fit in the usable blocks; cache: its prompt."""
        cfg = self.cfg
        if cfg.max_model_len is not None and tr.prompt_len >= cfg.max_model_len:
            return f"prompt of {tr.prompt_len} tokens >= max_model_len {cfg.max_model_len}"
        if cfg.mode == "cache":
            tokens = tr.prompt_len
        else:
            # The last sampled token is never computed; max_model_len stops it earlier.
            tokens = tr.prompt_len + tr.output_len - 1
            if cfg.max_model_len is not None:
                tokens = min(tokens, cfg.max_model_len - 1)
        if not self.all_full:
            return None   # windowed groups: the admission check and the stall guard decide
        need = sum(cdiv(tokens, g["block_size"]) for g in self.groups)
        if need > self.num_blocks - 1:
            return (f"needs {need} blocks of {cfg.block_size} tokens but only "
                    f"{self.num_blocks - 1} are usable (num_blocks {self.num_blocks})")
        return None

    def _reject(self, tr: TraceRequest, reason: str) -> None:
        info = self.infos[tr.id]
        info.rejected = reason
        self.summary.rejected += 1
        if self.jsonl is not None:
            self.jsonl.write("reject", tr.id, reason=reason)
        self.progress(1)

    def _count_admission(self, req: Request, info: _Info, hit: int, resumed: bool) -> None:
        s = self.summary
        if resumed:
            s.preempted_admissions += 1
            s.preempted_prompt_tokens += req.num_tokens
            s.preempted_hit_tokens += hit
            return
        info.hit_tokens = hit
        if info.pos < self.warmup_start:
            s.warmup_requests += 1
            return
        s.counted_requests += 1
        s.prompt_tokens += req.num_tokens
        s.hit_tokens += hit
        self.request_hit_sum += hit / req.num_tokens

    # -- driver ------------------------------------------------------------------------------
    def run(self) -> ReplaySummary:
        t0 = time.perf_counter()
        self._header()
        # Arrival order: timestamps (ties in file order), or with --arrivals step each request's
        # step, in file order within a step (as the scheduler oracle adds them).
        self.order = self.trace.requests
        if self.cfg.mode == "engine" and self.cfg.arrivals == "step":
            self.order = sorted(self.order, key=lambda r: (r.arrival_step, r.index))
        for pos, tr in enumerate(self.order):
            self.infos[tr.id] = _Info(tr, pos)
        try:
            if self.cfg.mode == "cache":
                self._run_cache()
            else:
                self._run_engine()
        except KeyboardInterrupt:
            self.summary.interrupted = True
        s = self.summary
        s.wall_time_s = round(time.perf_counter() - t0, 3)
        s.sim_time_s = round(self.t_ms / 1000.0, 6)
        s.steps = self.step
        s.hit_rate = s.hit_tokens / s.prompt_tokens if s.prompt_tokens else 0.0
        s.request_hit_rate_mean = (self.request_hit_sum / s.counted_requests
                                   if s.counted_requests else 0.0)
        s.evictions = self.recorder.evictions
        s.peak_usage = self.recorder.peak_used / max(self.num_blocks - 1, 1)
        s.num_free_blocks_end = self.kvm.block_pool.get_num_free_blocks()
        if self.jsonl is not None:
            s.events = self.jsonl.seq + 1   # + the end / interrupted line
        self._finish_outputs()
        return s

    def _finish_outputs(self) -> None:
        s = self.summary
        if self.requests_out is not None:
            for info in self.infos.values():
                if s.interrupted and info.first_scheduled_step is None and info.rejected is None:
                    continue
                self.requests_out.write(orjson.dumps(info.line()) + b"\n")
        if self.jsonl is not None:
            self.recorder.flush()   # evictions not followed by an allocation (none in a replay)
        if s.interrupted:
            for out in (self.steps_out, self.requests_out):
                if out is not None:
                    out.write(b'{"interrupted": true}\n')
            if self.sink is not None:
                self.sink.interrupted()
        elif self.jsonl is not None:
            self.jsonl.end(s.to_dict())

    # -- cache mode ----------------------------------------------------------------------------
    def _run_cache(self) -> None:
        kvm = self.kvm
        rec = self.recorder
        jsonl = self.jsonl
        skipped: list[tuple[int, str]] = []     # (line, why)
        for k, tr in enumerate(self.trace.requests):
            self.step = k
            self.t_ms = tr.arrival_ms
            info = self.infos[tr.id]
            info.arrival_ms = tr.arrival_ms
            if jsonl is not None:
                jsonl.step, jsonl.t_ms = k, tr.arrival_ms
                jsonl.write("arrive", tr.id, prompt_tokens=tr.prompt_len,
                            output_tokens=tr.output_len)
            why = self._never_fits(tr)
            if why is not None:
                if "max_model_len" in why and not self.cfg.skip_bad:
                    # vLLM rejects such a prompt outright: bad input, not a capacity question.
                    raise InputError(f"request {tr.id!r}: {why} (--skip-bad skips such "
                                     "requests)", path=self.trace.path, line=tr.line,
                                     field="input_length")
                skipped.append((tr.line, why))
                self._reject(tr, why)
                continue
            req = self._make_request(tr, k)
            blocks, hit = kvm.get_computed_blocks(req)[:2]
            rec.req = tr.id
            rec.on_admit_attempt(req)
            new = kvm.allocate_slots(req, req.num_tokens - hit, hit, blocks,
                                     full_sequence_must_fit=True)
            if new is None:   # cannot happen after _never_fits, kept as vLLM would answer
                rec.on_admit_failed(req)
                skipped.append((tr.line, "no room in an empty pool"))
                self._reject(tr, "no room in an empty pool")
                continue
            kvm.record_prefix_cache_stats(req, hit)
            self._count_admission(req, info, hit, False)
            rec.on_admit(req, hit, False)
            info.first_scheduled_step = k
            req.num_computed_tokens = req.num_tokens
            kvm.free(req)
            info.finish_step = k
            if self.vllm is not None:
                self.vllm.batch(tr.arrival_ms / 1000.0, kvm.take_events())
            self.summary.finished += 1
            self.progress(1)
        self.step = len(self.trace.requests)
        self._check_rejections(skipped)

    def _check_rejections(self, skipped: list[tuple[int, str]]) -> None:
        if not skipped:
            return
        line, why = skipped[0]
        if self.summary.rejected == self.summary.requests:
            raise InputError(f"no request fits: {why}", path=self.trace.path, line=line,
                             field="num_blocks")
        more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
        self.warn(f"skipped {len(skipped)} request(s) that can never fit, counted as "
                  f"rejected: {self.trace.path}:{line}: {why}{more}")

    # -- engine mode ---------------------------------------------------------------------------
    def _run_engine(self) -> None:
        cfg = self.cfg
        kvm = self.kvm
        rec = self.recorder
        jsonl = self.jsonl
        sched = Scheduler(
            SchedulerConfig(
                max_num_seqs=cfg.max_num_seqs, max_num_batched_tokens=cfg.max_num_batched_tokens,
                max_model_len=cfg.max_model_len or NO_MODEL_LEN_LIMIT,
                long_prefill_token_threshold=cfg.long_prefill_token_threshold,
                long_prefill_token_threshold_adaptive=cfg.long_prefill_token_threshold_adaptive,
                enable_chunked_prefill=cfg.enable_chunked_prefill, policy=cfg.policy,
                scheduler_reserve_full_isl=cfg.scheduler_reserve_full_isl,
                max_num_active_seqs=cfg.max_num_active_seqs),
            kvm, tracer=rec, observer=_Observer(self))
        self.sched = sched
        pending = deque(self.order)
        infos = self.infos
        max_len = cfg.max_model_len
        cost = self.cost
        steps_out = self.steps_out
        mode = cfg.arrivals
        skipped: list[tuple[int, str]] = []     # (line, why)
        usage_time = 0.0
        add_order = 0
        idle_run = 0
        num_usable = self.num_blocks - 1
        pool = kvm.block_pool

        def sample(req: Request) -> int:
            return infos[req.request_id].tr.output_token(req.num_output_tokens, max_len)

        while True:
            # 1. arrivals
            if mode == "timestamp" and pending and not sched.has_requests() \
                    and pending[0].arrival_ms > self.t_ms:
                self.t_ms = pending[0].arrival_ms   # idle engine: jump to the next arrival
            while pending and (mode == "ignore"
                               or (mode == "step" and pending[0].arrival_step <= self.step)
                               or (mode == "timestamp" and pending[0].arrival_ms <= self.t_ms)):
                tr = pending.popleft()
                info = infos[tr.id]
                info.arrival_ms = self.t_ms
                if jsonl is not None:
                    jsonl.step, jsonl.t_ms = self.step, self.t_ms
                    jsonl.write("arrive", tr.id, prompt_tokens=tr.prompt_len,
                                output_tokens=tr.output_len)
                why = self._never_fits(tr)
                if why is not None:
                    if not cfg.skip_bad:
                        field = "input_length" if "max_model_len" in why else "num_blocks"
                        raise InputError(f"request {tr.id!r} can never run: {why} "
                                         "(--skip-bad skips such requests)",
                                         path=self.trace.path, line=tr.line, field=field)
                    skipped.append((tr.line, why))
                    self._reject(tr, why)
                    continue
                sched.add_request(_Lazy(self, tr, add_order))
                add_order += 1
            if not pending and not sched.has_unfinished_requests():
                break   # like the oracle: no trailing step just to flush finished ids
            if not sched.has_requests():
                if mode == "step":
                    self.step += 1   # idle steps count
                continue
            if cfg.max_steps is not None and self.step >= cfg.max_steps:
                break
            if jsonl is not None:
                jsonl.step, jsonl.t_ms = self.step, self.t_ms
            # 2. schedule
            so = sched.schedule()
            nst = so.num_scheduled_tokens
            prefill = decodes = 0
            for rid, n in nst.items():
                info = infos[rid]
                if info.first_scheduled_step is None:
                    info.first_scheduled_step = self.step
                req = sched.requests[rid]
                if n == 1 and req.num_computed_tokens > req.num_prompt_tokens:
                    decodes += 1
                else:
                    prefill += n
            used = num_usable - pool.get_num_free_blocks()
            dt = cost.step_ms(prefill, decodes)
            usage_time += used * dt
            t_end = self.t_ms + dt
            # 3. fake model output + 4. update
            if jsonl is not None:
                jsonl.t_ms = t_end
            finished = sched.update_from_output(so, sample)
            for rid, n in nst.items():
                info = infos[rid]
                if info.first_token_ms is None and (rid in finished or
                                                    sched.requests[rid].num_output_tokens > 0):
                    info.first_token_ms = t_end
            for rid in finished:
                info = infos[rid]
                info.finish_step = self.step
                info.finish_ms = t_end
                if info.first_token_ms is None:
                    info.first_token_ms = t_end
                self.summary.finished += 1
                self.progress(1)
            if self.vllm is not None:
                self.vllm.batch(t_end / 1000.0, kvm.take_events())
            if steps_out is not None and (nst or so.preempted):
                steps_out.write(orjson.dumps({
                    "step": self.step, "t_ms": round(t_end, 6), "scheduled": nst,
                    "admitted": so.admitted, "preempted": so.preempted, "finished": finished,
                    "num_free_blocks": pool.get_num_free_blocks()}) + b"\n")
            # Stall guard: nothing can ever be scheduled again (e.g. a watermark that never
            # clears); vLLM would spin forever.
            if not nst and not so.preempted and not sched.running and not pending:
                idle_run += 1
                if idle_run > 1000:
                    head = next(iter(sched.waiting))
                    tr = infos[head.request_id].tr
                    raise InputError(f"request {tr.id!r} can never be admitted "
                                     "(stalled for 1000 steps)", path=self.trace.path,
                                     line=tr.line)
            else:
                idle_run = 0
            self.t_ms = t_end
            self.step += 1
        self.summary.mean_usage = (usage_time / self.t_ms / max(num_usable, 1)
                                   if self.t_ms > 0 else 0.0)
        self._check_rejections(skipped)


def _group_type(spec) -> str:
    """The group type in the header (`docs/events.md`): vLLM's spec kind names."""
    kind = getattr(spec, "kind", "full")
    return "full_attention" if kind == "full" else kind


class _Lazy:
    """A request waiting to be built (`kvcore.engine.scheduler.LazyRequest`)."""

    __slots__ = ("arrival_time", "priority", "request_id", "run", "tr")

    def __init__(self, run: _Replay, tr: TraceRequest, add_order: int) -> None:
        self.run = run
        self.tr = tr
        self.request_id = tr.id
        self.priority = tr.priority
        self.arrival_time = float(add_order)

    def build(self) -> Request:
        return self.run._make_request(self.tr, int(self.arrival_time))


class _Observer:
    """Scheduler observer: statistics here, event lines through the recorder."""

    def __init__(self, run: _Replay) -> None:
        self.run = run
        self.rec = run.recorder

    def on_admit_attempt(self, req: Request) -> None:
        self.rec.on_admit_attempt(req)

    def on_admit(self, req: Request, hit_tokens: int, resumed: bool) -> None:
        self.run._count_admission(req, self.run.infos[req.request_id], hit_tokens, resumed)
        self.rec.on_admit(req, hit_tokens, resumed)

    def on_admit_failed(self, req: Request) -> None:
        self.rec.on_admit_failed(req)

    def on_preempt(self, req: Request, num_computed_tokens: int) -> None:
        s = self.run.summary
        s.preemptions += 1
        s.recomputed_tokens += num_computed_tokens
        self.run.infos[req.request_id].preemptions += 1
        self.rec.on_preempt(req, num_computed_tokens)

    def on_finish(self, req: Request) -> None:
        self.rec.on_finish(req)


def options_from(**kw: Any) -> ReplayOptions:
    """`ReplayOptions(**kw)` ignoring keys it does not know (handy for callers with extras)."""
    names = set(ReplayOptions.__dataclass_fields__)
    return ReplayOptions(**{k: v for k, v in kw.items() if k in names})
