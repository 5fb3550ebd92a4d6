"""`Replica`: one engine of the cluster, the single-engine replay untouched, fed by the router.

Each replica is a `ReplayContext` with its own `KVCacheManager`, scheduler and clock, built on
the whole trace (so it is sized and checked exactly as `kvcli replay` of that trace would be)
but holding only the requests routed to it: a request joins its records and
its loop's `pending` when the router picks the replica, and the engine loop takes it in at its
next step, as it takes in a trace's arrivals. The cluster turns each replica's loop one step at
a time (`EngineLoop.advance`) when the shared clock reaches the replica's next step; in cache
mode a routed request runs at once (`CacheRun.one`).

The router's lookup built the request's `Request` (its block hashes): the replica takes that
object instead of hashing the prompt again (`make_request`).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from kvcore.cluster.view import Metrics
from kvcore.engine.cache_mode import CacheRun
from kvcore.engine.context import ReplayContext
from kvcore.engine.engine_loop import EngineLoop
from kvcore.engine.events import JsonlEvents
from kvcore.engine.options import ReplayOptions
from kvcore.engine.progress_watch import ProgressWatch
from kvcore.engine.replay import engine_loop
from kvcore.engine.token_progress import TOKEN_STEPS
from kvcore.engine.vllm_events import VllmEvents
from kvcore.request import Request
from kvcore.traces import Trace, TraceRequest


class ReplicaContext(ReplayContext):
    """A replay context holding only the requests routed to it (see the module docstring)."""

    summary_shows_tier_keys = False     # (the cluster's result holds no replica's tier state)

    def __init__(self, trace: Trace, cfg: ReplayOptions, sink: JsonlEvents | VllmEvents | None,
                 vllm_sink: VllmEvents | None) -> None:
        super().__init__(trace, cfg, sink, vllm_sink=vllm_sink)
        # Warm-up positions stay the whole trace's (the first fraction of the cluster's
        # requests is the warm-up, wherever they were routed).
        self.order = ()                 # (its loop takes requests from `Replica.add` alone)
        self.book.keep = True           # the cluster's report reads the records at the end
        self.summary.requests = 0
        self.prompt_tokens_total = 0
        self.prebuilt: dict[str, Request] = {}
        self.listener: Any = None       # told of rejections (the loop tells of the rest)
        self.first_skip: tuple[int, str] | None = None      # (line, why) of its first rejection

    all_rejected_is_bad = False     # (every request routed here may be rejected: no error)

    def check_rejections(self, skipped: list[tuple[int, str]]) -> None:
        if skipped:
            self.first_skip = skipped[0]
        super().check_rejections(skipped)

    def make_request(self, tr: TraceRequest, add_order: int) -> Request:
        req = self.prebuilt.pop(tr.id, None)
        if req is None:
            return super().make_request(tr, add_order)
        req.arrival_time = float(add_order)
        return req

    def reject(self, tr: TraceRequest, reason: str) -> None:
        super().reject(tr, reason)
        if self.listener is not None:
            self.listener.rejected(tr.id)


class Replica:
    __slots__ = ("cache", "ctx", "index", "loop", "routed", "stopped", "watch", "watch_due")

    def __init__(self, index: int, trace: Trace, cfg: ReplayOptions, listener: Any, *,
                 sink: JsonlEvents | VllmEvents | None = None,
                 vllm_sink: VllmEvents | None = None) -> None:
        self.index = index
        self.ctx = ctx = ReplicaContext(trace, cfg, sink, vllm_sink)
        ctx.listener = listener
        self.routed = 0
        self.stopped = False        # its loop ended early (max_steps)
        self.loop: EngineLoop | None = None
        self.cache: CacheRun | None = None
        self.watch: ProgressWatch | None = None     # (a loop that gets nowhere stops)
        self.watch_due = TOKEN_STEPS
        if ctx.cfg.mode == "cache":
            self.cache = CacheRun(ctx)
        else:
            self.loop = engine_loop(ctx)
            self.watch = ProgressWatch(self.loop)
            self.loop.pending = deque()     # `add` brings its requests, none come from a trace
            self.loop.incoming = None
            self.loop.listener = listener

    def add(self, tr: TraceRequest, pos: int, req: Request) -> None:
        """`tr` (trace position `pos`, its `Request` built) is routed here."""
        ctx = self.ctx
        ctx.book.open(tr, pos)
        ctx.summary.requests += 1
        ctx.prompt_tokens_total += tr.prompt_len
        ctx.prebuilt[tr.id] = req
        if self.cache is not None:
            rejected = ctx.summary.rejected
            self.cache.one(tr, self.routed)
            listener = ctx.listener
            if listener is not None and ctx.summary.rejected == rejected:
                # cache mode: the request runs and ends at its arrival
                listener.first_token(tr.id, tr.arrival_ms)
                listener.finished(tr.id, tr.arrival_ms)
        else:
            self.loop.pending.append(tr)    # type: ignore[union-attr]
        self.routed += 1

    def ready_ms(self) -> float:
        """When this replica's next loop turn starts (inf: nothing to do until routed to)."""
        loop = self.loop
        if loop is None or self.stopped or loop.done():
            return math.inf
        t = self.ctx.t_ms
        if loop.waiting_for_arrival:    # a refused head waits for what is routed here next
            return max(t, loop.pending[0].arrival_ms) if loop.pending else math.inf
        if loop.has_work() or not loop.pending:
            return t
        return max(t, loop.pending[0].arrival_ms)      # idle: it wakes at the arrival

    def advance(self, horizon_ms: float, next_arrival_ms: float) -> None:
        """One loop turn; nothing routed here can arrive before `horizon_ms` (the next arrival
        or metrics sample anywhere); the next request to route arrives at `next_arrival_ms`."""
        loop = self.loop
        assert loop is not None
        loop.horizon_ms = horizon_ms
        loop.next_arrival_ms = next_arrival_ms
        if not loop.advance() and not loop.done():
            self.stopped = True
        if self.watch is not None and self.ctx.step >= self.watch_due:
            # (every `TOKEN_STEPS` steps, as a replay's loop asks: `progress_watch`)
            self.watch_due = self.ctx.step + TOKEN_STEPS
            self.watch.check()

    def metrics(self, t_ms: float) -> Metrics:
        """What a scrape of this replica's metrics reads now."""
        ctx = self.ctx
        if self.loop is None:
            return Metrics(0, 0, ctx.kvm.usage, t_ms)
        sched = self.loop.sched
        return Metrics(len(sched.waiting) + len(sched.kv_holding), len(sched.running),
                       ctx.kvm.usage, t_ms)

    def hit(self, req: Request) -> int:
        """The tokens `req` would hit in this replica's prefix cache now (read-only)."""
        return self.ctx.kvm.get_computed_blocks(req)[1]

    def close(self) -> None:
        """After the cluster's last event: the loop's end (or cache mode's)."""
        if self.loop is not None:
            self.loop.finish()
        elif self.cache is not None:
            self.cache.close(self.routed)
