"""`LazyTraceRequest`: a trace request that arrived, waiting in the scheduler's queue to be
built (`kvcore.engine.scheduler_io.LazyRequest` says why): the replay's request by
`ReplayContext.make_request` when it reaches the head."""

from __future__ import annotations

from kvcore.engine.context import ReplayContext
from kvcore.request import Request
from kvcore.traces import TraceRequest


class LazyTraceRequest:
    __slots__ = ("arrival_time", "ctx", "priority", "request_id", "tr")

    def __init__(self, ctx: ReplayContext, tr: TraceRequest, add_order: int) -> None:
        self.ctx = ctx
        self.tr = tr
        self.request_id = tr.id
        self.priority = tr.priority
        self.arrival_time = float(add_order)

    def build(self) -> Request:
        return self.ctx.make_request(self.tr, int(self.arrival_time))
