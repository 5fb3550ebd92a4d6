"""`ClusterLoop`: N replicas and a router on one simulated clock (a discrete-event loop).

What happens, in time order; at equal times: deliveries, then a metrics sample, then an
arrival, then a replica's step; replicas by index; deliveries in the order they were made:

* **delivery**: a replica's first token or finish reaching the router (its counters and
  hooks), or a replica's vLLM KV event batch reaching the event index, at the batch's time
  plus `kv_event_lag_ms` (vLLM publishes a step's events with the step's output, so even with
  no lag the index learns a step's blocks when the step ends);
* **sample**: every `metrics_interval_ms`, each replica's metrics as a scrape reads them;
* **arrival**: the router picks a replica (`Router.route`), which adds the request to its
  pending arrivals; cache mode runs it there at once;
* **step**: the replica whose next step starts first runs it (`EngineLoop.advance`), exactly
  as `kvcli replay` runs its steps (the clock, scheduling and outputs are the replay's).

A step is computed when it starts: a router deciding while a step runs sees that replica as the
step left it (vLLM's scheduler has allocated and cached the step's blocks when the step starts;
only the step's finishes show their freed blocks up to one step early). The fast-forward of
decode stretches (`--no-async-scheduling`) stops before the next arrival and the next sample.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from typing import IO, Any

import orjson

from kvcore.cluster.ceiling import Ceilings
from kvcore.cluster.event_index import EventIndex
from kvcore.cluster.replica import Replica
from kvcore.cluster.router import DecisionLog, Router, RouteRequest
from kvcore.cluster.view import ClusterView
from kvcore.engine.vllm_events import VllmEvents
from kvcore.errors import InputError
from kvcore.traces import TraceRequest

FIRST, FINISH, REJECT, KV = range(4)


class ClusterLoop:
    def __init__(self, replicas: list[Replica], router: Router, order: list[TraceRequest], *,
                 metrics_interval_ms: float, kv_event_lag_ms: float,
                 decisions_out: IO[bytes] | None = None) -> None:
        self.replicas = replicas
        self.router = router
        self.n = n = len(replicas)
        ctx0 = replicas[0].ctx
        self.arrivals: deque[TraceRequest] = deque(order)
        self.pos = {tr.id: k for k, tr in enumerate(order)}     # arrival order
        self.interval = metrics_interval_ms
        self.lag = kv_event_lag_ms
        self.heap: list[tuple[float, int, Any]] = []
        self.seq = 0
        self.next_sample = 0.0 if metrics_interval_ms > 0 else math.inf
        self.events = EventIndex(n) if router.uses_events() else None
        self.view = ClusterView(n, ctx0.kvm.hash_block_size, ctx0.num_blocks - 1, self._hit,
                                self.events)
        # the request being routed and every replica's true hit for it (computed once: the
        # report's disagreement and regret need it, the oracle router reads it)
        self.truth: tuple[str, list[int]] = ("", [])
        self.prompt: dict[str, int] = {}
        self.log = DecisionLog()
        self.ceilings = Ceilings(n, ctx0.kvm.hash_block_size)
        # engine mode, outputs from the trace: the request until it finishes, when its decode
        # blocks join the ceilings' caches
        self.decoding: dict[str, Any] = {}
        self.engine = ctx0.cfg.mode != "cache"
        self.decisions_out = decisions_out
        # arrivals on the clock by their timestamps (engine mode with arrivals=ignore: all at 0)
        self.ready: list[float] = []
        self.timed = ctx0.cfg.mode == "cache" or ctx0.cfg.arrivals == "timestamp"
        self.progress: Callable[[int], None] | None = None     # told of each routed request

    def _hit(self, replica: int, req: RouteRequest) -> int:
        rid, truth = self.truth
        assert req.id == rid, "a router asked the true hit of a request it is not routing"
        return truth[replica]

    # -- what the replicas tell ---------------------------------------------------------------
    def push(self, t_ms: float, kind: int, replica: int, payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t_ms, self.seq, (kind, replica, payload)))

    def hooks(self, replica: int) -> _Hooks:
        return _Hooks(self, replica)

    # -- the loop -------------------------------------------------------------------------------
    def run(self) -> None:
        replicas = self.replicas
        heap = self.heap
        arrivals = self.arrivals
        # Each replica's next step time, recomputed only when it changes (it stepped, or a
        # request was routed to it): scanning every replica at every event was a quarter of
        # an 8-replica run (cProfile, first 2,000 conversation requests).
        ready = self.ready = [rep.ready_ms() for rep in replicas]
        timed = self.timed
        view = self.view
        while True:
            a = (arrivals[0].arrival_ms if timed else 0.0) if arrivals else math.inf
            t_step = min(ready)
            t = min(a, t_step, heap[0][0] if heap else math.inf)
            if t == math.inf:
                break
            view.now_ms = t
            if heap and heap[0][0] <= t:
                self.deliver(*heapq.heappop(heap)[2])
            elif self.next_sample <= t:
                self.sample(t)
            elif a <= t_step:
                self.route(arrivals.popleft(), a)
                if self.progress is not None:
                    self.progress(1)
                if not arrivals:
                    self.wake(a)
            else:
                best = ready.index(t_step)
                nxt = arrivals[0].arrival_ms if arrivals and timed else math.inf
                rep = replicas[best]
                rep.advance(min(nxt, self.next_sample), nxt)
                ready[best] = rep.ready_ms()
        for rep in replicas:
            rep.close()
        firsts = [r.ctx.first_skip for r in replicas if r.ctx.first_skip is not None]
        if firsts and all(r.ctx.summary.rejected == r.ctx.summary.requests for r in replicas):
            raise replicas[0].ctx.none_fits(*min(firsts))

    def wake(self, t: float) -> None:
        """The last request is routed: a replica whose refused head waited for an arrival
        (`EngineLoop.waiting_for_arrival`) steps again at `t`, and now nothing can lift it."""
        for i, rep in enumerate(self.replicas):
            loop = rep.loop
            if loop is not None and loop.waiting_for_arrival:
                loop.waiting_for_arrival = False
                loop.next_arrival_ms = math.inf
                rep.ctx.t_ms = max(rep.ctx.t_ms, t)
                self.ready[i] = rep.ready_ms()

    def sample(self, t: float) -> None:
        """Scrape every replica at the last sample time at or before `t` (nothing changed
        since the sample that was due)."""
        s = self.next_sample + math.floor((t - self.next_sample) / self.interval) * self.interval
        self.view.metrics = [rep.metrics(s) for rep in self.replicas]
        self.next_sample = s + self.interval

    def deliver(self, kind: int, i: int, payload: Any) -> None:
        view = self.view
        if kind == KV:
            self.events.apply(i, payload)       # type: ignore[union-attr]
            return
        rid = payload
        if kind in (FIRST, REJECT) and rid in self.prompt:
            view.prefilling[i] -= 1
            view.prefill_tokens[i] -= self.prompt.pop(rid)
            if kind == FIRST:
                self.router.on_first_token(rid, i, view.now_ms)
        if kind in (FINISH, REJECT):
            view.in_flight[i] -= 1
            req = self.decoding.pop(rid, None)
            if req is not None and kind == FINISH:
                # the blocks past its prompt's that it computed: its last sampled token never was
                bs = self.ceilings.block_size
                self.ceilings.add_output(
                    req.block_hashes[req.num_prompt_tokens // bs:(req.num_tokens - 1) // bs], i)
            # a rejected request's stream ends too (vLLM answers it with an error): a router
            # frees what it charged for it, as it does at a finish (Dynamo's `free`)
            self.router.on_finished(rid, i, view.now_ms)

    def route(self, tr: TraceRequest, t: float) -> None:
        view = self.view
        view.now_ms = t
        rep0 = self.replicas[0]
        req = rep0.ctx.make_request(tr, 0)
        pos = self.pos[tr.id]
        rr = RouteRequest(tr.id, pos, tr.arrival_ms, tr.prompt_len, tr.output_len, None, tr,
                          raw=list(req.block_hashes))   # (the request's list grows in decode)
        truth = [rep.hit(req) for rep in self.replicas]
        self.truth = (tr.id, truth)
        d = self.router.route(rr, view)
        i = d.replica
        if not (isinstance(i, int) and 0 <= i < self.n):
            raise AssertionError(f"router {self.router.name} chose replica {i!r} of {self.n}")
        log = self.log
        log.reasons[d.reason] = log.reasons.get(d.reason, 0) + 1
        log.regret_tokens += max(truth) - truth[i]
        if d.predicted_hit is not None:
            log.predicted += 1
            if d.predicted_hit > truth[i]:
                log.false_hit += 1
            elif d.predicted_hit < truth[i]:
                log.false_miss += 1
        self.ceilings.add(tr.id, req.block_hashes, tr.prompt_len, i)
        if self.engine and tr.output_token_ids is not None:
            self.decoding[tr.id] = req
        view.in_flight[i] += 1
        view.prefilling[i] += 1
        view.prefill_tokens[i] += tr.prompt_len
        self.prompt[tr.id] = tr.prompt_len
        view.routed[i] += 1
        self.router.on_routed(rr, i, view)
        if self.decisions_out is not None:
            self.decisions_out.write(orjson.dumps({
                "router": self.router.name, "request": tr.id, "t_ms": round(t, 6), "replica": i, "reason": d.reason,
                "scores": d.scores, "predicted_hit": d.predicted_hit, "true_hits": truth,
            }) + b"\n")
        rep = self.replicas[i]
        rep.add(tr, pos, req)
        self.ready[i] = rep.ready_ms()


class _Hooks:
    """A replica's listener: its first tokens, finishes and rejections, on their way to the
    router."""

    __slots__ = ("i", "run")

    def __init__(self, run: ClusterLoop, i: int) -> None:
        self.run = run
        self.i = i

    def first_token(self, rid: str, t_ms: float) -> None:
        self.run.push(t_ms, FIRST, self.i, rid)

    def finished(self, rid: str, t_ms: float) -> None:
        self.run.push(t_ms, FINISH, self.i, rid)

    def rejected(self, rid: str) -> None:
        self.run.push(self.run.view.now_ms, REJECT, self.i, rid)


class ReplicaEvents(VllmEvents):
    """A replica's vLLM event batches: to its file (if any; `data_parallel_rank` = the
    replica) and, after the lag, to the router's event index (once `run` is set)."""

    def __init__(self, out: IO[bytes] | None, rank: int, live: VllmEvents | None = None
                 ) -> None:
        """`live`: a live run's sink (`kvcore.live`), if any."""
        super().__init__(out, rank)     # type: ignore[arg-type]
        self.replica = rank
        self.run: ClusterLoop | None = None
        self.live = live
        # (the router's index alone reads hashes no person sees: the hash options change nothing)
        self.shows_hashes = out is not None or live is not None

    def batch(self, ts_s: float, events: list) -> None:
        if self.out is not None:
            super().batch(ts_s, events)
        if self.live is not None:
            self.live.batch(ts_s, events)
        if events and self.run is not None and self.run.events is not None:
            self.run.push(ts_s * 1000.0 + self.run.lag, KV, self.replica, events)

    def interrupted(self) -> None:
        if self.out is not None:
            super().interrupted()


def check_replicas(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"must be a positive integer, got {n!r}", field="replicas")
