"""`ReplayObserver`: what a replay does when the scheduler admits, preempts or finishes a request
(`kvcore.engine.scheduler_io.SchedulerObserver`)."""

from __future__ import annotations

from kvcore.engine.context import ReplayContext
from kvcore.request import Request


class ReplayObserver:
    """The scheduler's observer in a replay: admissions, preemptions and finishes counted in the
    context and written through the recorder (each before the block events it causes)."""

    def __init__(self, ctx: ReplayContext) -> None:
        self.ctx = ctx
        self.rec = ctx.recorder

    def on_admit_attempt(self, req: Request) -> None:
        self.rec.on_admit_attempt(req)

    def on_admit(self, req: Request, hit_tokens: int, resumed: bool) -> None:
        self.ctx.count_admission(req, hit_tokens, resumed)
        self.rec.on_admit(req, hit_tokens, resumed)

    def on_admit_failed(self, req: Request) -> None:
        self.rec.on_admit_failed(req)

    def on_preempt(self, req: Request, num_computed_tokens: int) -> None:
        s = self.ctx.summary
        s.preemptions += 1
        s.recomputed_tokens += num_computed_tokens
        self.ctx.records[req.request_id].preemptions += 1
        self.rec.on_preempt(req, num_computed_tokens)

    def on_finish(self, req: Request) -> None:
        rec = self.ctx.records[req.request_id]
        rec.generated = req.num_output_tokens
        jsonl = self.ctx.jsonl
        # The event carries the request's latencies; its record gets its finish time after the
        # step's update (`EngineLoop.account`), and every path sets the stream's clock to it first.
        self.rec.on_finish(req, None if jsonl is None else rec.latency(now=jsonl.t_ms))
