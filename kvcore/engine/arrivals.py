"""The requests an engine loop takes in as they arrive (`EngineLoop.arrivals`, each turn):
by their timestamps on the clock (an idle engine's clock jumps to the next one), at their
integer `arrival_step`, or all at once (`arrivals="ignore"`). Each is told to the request book
and our event stream, then admitted to the scheduler or rejected
(`ReplayContext.admit_or_reject`). They come one at a time from the trace read ahead
(`kvcore.engine.read_ahead`) into the loop's `pending`, where a cluster's router puts its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.engine.lazy_request import LazyTraceRequest

if TYPE_CHECKING:
    from kvcore.engine.engine_loop import EngineLoop


def take_arrivals(loop: EngineLoop) -> None:
    """Add the requests that have arrived; an idle engine jumps to the next arrival."""
    ctx = loop.ctx
    pending = loop.pending
    mode = ctx.cfg.arrivals
    ctx.t_ms = max(ctx.t_ms, loop.transfer_wait_ms)
    if mode == "timestamp" and (pending or pull(loop)) and (
            loop.waiting_for_arrival or not loop.has_work()) \
            and pending[0].arrival_ms > ctx.t_ms:
        ctx.t_ms = pending[0].arrival_ms
    jsonl = ctx.jsonl
    while (pending or pull(loop)) and (
            mode == "ignore" or (mode == "step" and pending[0].arrival_step <= ctx.step)
            or (mode == "timestamp" and pending[0].arrival_ms <= ctx.t_ms)):
        tr = pending.popleft()
        loop.waiting_for_arrival = False
        rec = ctx.book.arrived(tr)
        rec.arrival_ms = ctx.t_ms
        # Latency counts from the trace's arrival (the engine takes a request in at the end
        # of the step running then), or from time 0 when all arrive at once (`latency.py`).
        if mode == "timestamp":
            rec.latency_from_ms = tr.arrival_ms
        elif mode == "ignore":
            rec.latency_from_ms = ctx.t_ms
        if jsonl is not None:
            jsonl.step, jsonl.t_ms = ctx.step, ctx.t_ms
            jsonl.write("arrive", tr.id, prompt_tokens=tr.prompt_len,
                        output_tokens=tr.output_len)
        if ctx.admit_or_reject(tr, loop.skipped):
            loop.sched.add_request(LazyTraceRequest(ctx, tr, loop.add_order))
            loop.add_order += 1


def pull(loop: EngineLoop) -> bool:
    """The next request to arrive into the loop's `pending`; False when none is left."""
    tr = None if loop.incoming is None else next(loop.incoming, None)
    if tr is None:
        loop.incoming = None
        return False
    loop.pending.append(tr)
    return True
