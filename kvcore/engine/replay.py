"""Replay a trace through kvcore: `replay(trace_path, options, sink) -> ReplaySummary`.

Two modes share one `KVCacheManager` (`context.py` builds what they share):

* engine (default, `engine_loop.py`): vLLM's scheduler step by step on a simulated clock.
* cache (`cache_mode.py`): one request at a time in arrival order: look up, allocate the whole
  prompt, free.

Hit rates count every request at its first admission, past the warm-up (`warmup` leaves the
first fraction out), as vLLM's prefix-cache stats do. Outputs stream as they happen: the event
sink (ours or vLLM's), the step lines and, at the end, the request lines. Ctrl-C ends the
replay cleanly: what was written ends with an `interrupted` record and the summary says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import IO, Any

from kvcore.engine import hash_ahead, latency
from kvcore.engine.cache_mode import run_cache
from kvcore.engine.context import ReplayContext
from kvcore.engine.engine_loop import EngineLoop
from kvcore.engine.events import JsonlEvents
from kvcore.engine.options import ReplayOptions, resolve
from kvcore.engine.refusal import said_where_set
from kvcore.engine.replay_pool import concurrent_batches
from kvcore.engine.results import ReplaySummary
from kvcore.engine.spec_decode import hash_lookahead
from kvcore.engine.vllm_events import VllmEvents
from kvcore.errors import InputError, LookupAssertion
from kvcore.gc_pause import gc_paused
from kvcore.interrupts import deferred
from kvcore.offload.tier_outputs import offload_summary
from kvcore.traces import Trace, read_trace

__all__ = ["ReplayOptions", "ReplaySummary", "replay"]


def replay(trace_path: str, options: ReplayOptions, sink: JsonlEvents | VllmEvents | None = None,
           *, steps_out: IO[bytes] | None = None, requests_out: IO[bytes] | None = None,
           progress: Callable[[int], None] | None = None,
           warn: Callable[[str], None] | None = None, trace: Trace | None = None,
           live: Any = None,
           output_progress: Callable[[int], None] | None = None) -> ReplaySummary:
    """Replay `trace_path` (or an already read `trace`) and return the summary.

    `sink` receives the event stream; `steps_out` / `requests_out` get JSON lines (binary files).
    Bad input raises `InputError`; Ctrl-C returns a summary with `interrupted=True` after ending
    every output with an `interrupted` record. `live` (a `kvcore.live.session.LiveRun`) makes
    the replay a stand-in vLLM: its batches published, paced, its metrics; it is closed here.
    `progress(1)` follows each request finished or rejected; in engine mode `output_progress`
    is told the output tokens so far now and then (`kvcore.engine.token_progress`).
    """
    with gc_paused():
        return _replay(trace_path, options, sink, steps_out, requests_out, progress, warn,
                       trace, live, output_progress)


def _replay(trace_path: str, options: ReplayOptions, sink: JsonlEvents | VllmEvents | None,
            steps_out: IO[bytes] | None, requests_out: IO[bytes] | None,
            progress: Callable[[int], None] | None, warn: Callable[[str], None] | None,
            trace: Trace | None, live: Any,
            output_progress: Callable[[int], None] | None) -> ReplaySummary:
    if trace is None:
        trace = read_trace(trace_path)
    cfg = resolve(options, trace.config, path=trace_path, config_line=trace.config_line)
    vllm_sink = None
    if live is not None:
        if isinstance(sink, VllmEvents):     # the file behind the live sink
            sink = live.sink(0, sink)
        else:
            vllm_sink = live.sink(0, None)
    try:
        # The start-up warnings are held until every start-up check has passed (the live
        # sinks' below): a refusal stays one line, not a warning and then the error.
        held: list[str] = []
        ctx = ReplayContext(trace, cfg, sink, steps_out=steps_out, requests_out=requests_out,
                            progress=progress, warn=held.append, vllm_sink=vllm_sink,
                            output_progress=output_progress)
        loop = engine_loop(ctx) if cfg.mode != "cache" else None
        if live is not None:
            listener = live.attach(0, ctx, loop)
            if loop is not None and listener is not None:
                loop.listener = listener
        ctx.warn = warn or (lambda msg: None)
        # (a run vLLM fails at its first lookup is refused mid-run: its warnings wait for a
        # run that ends without one, so the refusal stays one line)
        after_run = ctx.lookup_refusal is not None
        for message in () if after_run else held:
            ctx.warn(message)
        # the metrics file ends with the other outputs, signals held
        run(ctx, loop, end_also=None if live is None else
            lambda: live.end_outputs(ctx.t_ms, ctx.summary.interrupted))
        for message in held if after_run else ():
            ctx.warn(message)
    except BaseException as exc:
        if isinstance(sink, JsonlEvents):
            sink.abandon()      # its line thread (the output is discarded)
        if live is not None:
            live.close(final=False)
        if isinstance(exc, InputError):
            # (a refusal mid-run names an option too: the config line's, where it set it)
            raise said_where_set(cfg, trace, exc) from None
        raise
    if live is not None:
        ctx.summary.live = live.close(ctx.t_ms, interrupted=ctx.summary.interrupted)
        ctx.summary.warnings += live.said   # (said on stderr as they came)
    return ctx.summary


def run(ctx: ReplayContext, loop: EngineLoop | None = None,
        end_also: Callable[[], None] | None = None) -> None:
    """Run the context's mode to the end (or Ctrl-C), then fill the summary and end the outputs
    (and call `end_also`, which ends the caller's own, with them). An engine-mode caller may
    pass its own `EngineLoop` over `ctx` (to look at the scheduler)."""
    t0 = time.perf_counter()
    header(ctx)
    try:
        # the prompts' hashes computed ahead on a second thread (compiled build; `hash_ahead.py`),
        # fed as the requests are read (`read_ahead.py`)
        with hash_ahead.segments(ctx.hasher) as ctx.prompt_hashes:
            if ctx.cfg.mode == "cache":
                run_cache(ctx)
            else:
                (loop or engine_loop(ctx)).run()
    except KeyboardInterrupt:
        ctx.summary.interrupted = True
    except LookupAssertion:
        # (the manager met vLLM's assertion at the run's first lookup: said as the start-up
        # foresaw it, in vLLM's words; the outputs are discarded)
        if ctx.lookup_refusal is None:
            raise
        raise ctx.lookup_refusal from None
    with deferred():          # a signal now would cut the outputs' last records
        summarize(ctx, t0)
        finish_outputs(ctx)
        if end_also is not None:
            end_also()


def engine_loop(ctx: ReplayContext) -> EngineLoop:
    """The engine mode's loop: the batch queue when vLLM runs one (more than one batch in
    flight: async scheduling, pipeline parallelism), else one batch a step."""
    if concurrent_batches(ctx.cfg) > 1:
        from kvcore.engine.async_loop import AsyncEngineLoop

        return AsyncEngineLoop(ctx)
    return EngineLoop(ctx)


def summarize(ctx: ReplayContext, t0: float) -> None:
    s = ctx.summary
    s.wall_time_s = round(time.perf_counter() - t0, 3)
    s.sim_time_s = round(ctx.t_ms / 1000.0, 6)
    s.steps = ctx.step
    s.hit_rate = s.hit_tokens / s.prompt_tokens if s.prompt_tokens else 0.0
    s.request_hit_rate_mean = (ctx.request_hit_sum / s.counted_requests
                               if s.counted_requests else 0.0)
    s.evictions = ctx.recorder.evictions
    s.peak_usage = ctx.recorder.peak_used / max(ctx.num_blocks - 1, 1)
    s.num_free_blocks_end = ctx.kvm.block_pool.get_num_free_blocks()
    if ctx.jsonl is not None:
        s.events = ctx.jsonl.seq + 1   # + the end / interrupted line
    book = ctx.book
    book.settle()
    if latency.applies(ctx.cfg.mode, ctx.cfg.arrivals):
        # the hit rate's requests (past the warm-up; rejected ones never ran) that finished
        s.latency = latency.columns_summary(book.latency, ctx.cost.uncalibrated)
    if ctx.tier is not None:
        s.offload = offload_summary(ctx.tier, book.gpu_hits, book.cpu_hits)
        # the hit rate's requests (first admissions past the warm-up), CPU hits included
        cpu = book.counted_cpu_hits
        s.offload["counted_cpu_hit_tokens"] = cpu
        s.offload["hit_rate_with_cpu"] = (s.hit_tokens + cpu) / s.prompt_tokens \
            if s.prompt_tokens else 0.0


def header(ctx: ReplayContext) -> None:
    if ctx.jsonl is not None:
        cfg = ctx.cfg
        ctx.jsonl.header({"mode": cfg.mode, "block_size": cfg.block_size,
                          "num_blocks": ctx.num_blocks, "groups": ctx.groups,
                          "warmup": cfg.warmup, "trace": ctx.trace.label,
                          "format": ctx.trace.format, "config": cfg.to_dict(),
                          "uncalibrated_clock": (ctx.cost.uncalibrated if cfg.mode == "engine"
                                                 else None),
                          # (only where a group's block is coarser: `admit`'s lists are
                          # null for it, kvcli stats reads its misses at this block)
                          **({"hash_block_size": hbs} if any(
                              g["block_size"] != (hbs := ctx.kvm.hash_block_size)
                              for g in ctx.groups) else {}),
                          # (EAGLE's: a prompt of whole blocks has no hash for its last one)
                          **({"hash_lookahead": True} if hash_lookahead(cfg) else {})})


def finish_outputs(ctx: ReplayContext) -> None:
    s = ctx.summary
    if ctx.requests_out is not None:
        ctx.book.write_lines(s.interrupted, ctx.unreached())
    if ctx.jsonl is not None:
        ctx.recorder.flush()   # evictions not followed by an allocation (none in a replay)
    if s.interrupted:
        for out in (ctx.steps_out, ctx.requests_out):
            if out is not None:
                out.write(b'{"interrupted": true}\n')
        if ctx.sink is not None:
            ctx.sink.interrupted()
    elif ctx.jsonl is not None:
        ctx.jsonl.end(s.to_dict())
