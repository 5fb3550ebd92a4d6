"""Engine mode: vLLM's scheduler step by step on a simulated clock.

Requests arrive by their timestamps (`arrivals="timestamp"`; the cost model says how long a step
takes), all at once (`ignore`), or at their integer `arrival_step` (`step`: steps count from 0
and idle steps count, as the scheduler oracle does; taken in by `kvcore.engine.arrivals`).
Each step: arrivals, `schedule()`, a fake model that samples one token per request at the end
of its known tokens (`TraceRequest.output_token`), `update_from_output`, then the accounting
(times, usage, the step line and the vLLM event batch).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from itertools import chain
from typing import Any

import orjson

from kvcore.engine.arrivals import take_arrivals
from kvcore.engine.batch_time import batch_ms
from kvcore.engine.context import ReplayContext
from kvcore.engine.decode_windows import DecodeWindows
from kvcore.engine.fake_model import next_token, next_tokens
from kvcore.engine.fast_forward import decode_stretch, run_stretch
from kvcore.engine.load_check import check_load
from kvcore.engine.options import build
from kvcore.engine.progress_watch import ProgressWatch
from kvcore.engine.read_ahead import read_ahead
from kvcore.engine.replay_observer import ReplayObserver
from kvcore.engine.scheduler import (
    NO_MODEL_LEN_LIMIT,
    Scheduler,
    SchedulerConfig,
    SchedulerOutput,
)
from kvcore.engine.spec_accept import accepted_drafts
from kvcore.engine.spec_decode import propose
from kvcore.engine.stall import guard
from kvcore.engine.token_progress import TOKEN_STEPS, tell_output_tokens
from kvcore.offload.tier import OffloadTier
from kvcore.request import Request
from kvcore.traces import TraceRequest


class EngineLoop:
    # Exact decode fast-forward (`kvcore.engine.fast_forward`); tests turn it off to compare.
    fast_forward = True
    # Decode windows (`kvcore.engine.decode_windows`); tests turn them off to compare.
    decode_windows = True

    def __init__(self, ctx: ReplayContext) -> None:
        self.ctx = ctx
        if ctx.cost.needs_each:
            # Windowed layers clamp each decode's context; windows and the fast-forward report
            # decodes only as an aggregate (`kvcore.clock.base`).
            self.decode_windows = self.fast_forward = False
        cfg = ctx.cfg
        if cfg.pipeline_parallel_size > 1 or cfg.num_speculative_tokens:
            # (both reason about one batch in flight, or async's two, and one token a decode:
            # speed only, off here)
            self.decode_windows = self.fast_forward = False
        self.sched = Scheduler(
            build(SchedulerConfig, cfg, max_model_len=cfg.max_model_len or NO_MODEL_LEN_LIMIT),
            ctx.kvm, tracer=ctx.recorder, observer=ReplayObserver(ctx))
        if cfg.num_speculative_tokens:
            self.sched.accept = self.accept
        # The CPU tier (`kvcore.offload`): no fast-forward (its worker runs every step); decode
        # windows stay on (a window step allocates, completes and offers nothing; under async,
        # vLLM's deferred frees learn a window request's last scheduled step from it).
        self.tier: OffloadTier | None = ctx.open_tier()
        if self.tier is not None:
            self.sched.attach_connector(self.tier.conn, self.tier.stats)
            self.fast_forward = False
        if self.decode_windows:
            self.sched.windows = DecodeWindows(ctx.kvm, self.sched.config.max_model_len,
                                               self.sample_run, cfg.async_scheduling)
            if self.tier is not None:
                self.sched.windows.deferred = self.sched.deferred
                self.sched.windows.offer_failed = self.tier.conn.offer_failed
        # The next request to arrive (none: none is left), then the others (`read_ahead.py`).
        self.pending: deque[TraceRequest] = deque()
        self.incoming: Iterator[TraceRequest] | None = read_ahead(ctx.order,
                                                                  lambda: ctx.prompt_hashes)
        ctx.unreached = lambda: chain(self.pending, self.incoming or ())
        self.skipped: list[tuple[int, str]] = []     # (line, why)
        self.add_order = 0
        self.idle_run = self.transfer_idle = self.reload_idle = 0
        # a refused head with nothing else to change waits for the next arrival (`stall.guard`)
        self.waiting_for_arrival = False
        self.transfer_wait_ms = 0.0     # idle on a CPU tier's transfer: the clock goes on to it
        self.usage_time = 0.0
        self.num_usable = ctx.num_blocks - 1
        self.ff_head: Any = None        # a refused waiting head the fast-forward keeps refused
        self.ff_finish: list[int] = []      # the stretch step each running request finishes in
        # `kvcore.cluster`: told of first tokens and finishes (`first_token` / `finished(rid,
        # t_ms)`); before `horizon_ms` nothing arrives that `pending` lacks (fast-forward bound);
        # `next_arrival_ms`: the next request to route, anywhere (inf: none is left)
        self.listener: Any = None
        self.horizon_ms = self.next_arrival_ms = math.inf
        # `watcher.scheduled(step, out)` right after `schedule()`, when the batch's tables are
        # what its forward reads (`kvcore.engine.decode_capture`)
        self.watcher: Any = None
        tell_output_tokens(self)    # (0: a bar counts tokens before the start-up warnings)

    def sample(self, req: Request) -> int:
        """The fake model: the next token of a request at the end of its known tokens."""
        return next_token(self.ctx.records[req.request_id], req.num_output_tokens,
                          self.ctx.cfg.max_model_len)

    def accept(self, req: Request, num_drafts: int) -> int:
        """The fake model's verdict on ``num_drafts`` drafts (`kvcore.engine.spec_accept`)."""
        cfg = self.ctx.cfg
        return accepted_drafts(cfg.spec_seed, req.request_id, req.num_output_tokens,
                               num_drafts, cfg.spec_acceptance_rate)  # type: ignore[arg-type]

    def sample_run(self, req: Request, n: int) -> list[int]:
        """The fake model's next ``n`` tokens of a decoding request (a decode window's)."""
        return next_tokens(self.ctx.records[req.request_id], req.num_output_tokens, n,
                           self.ctx.cfg.max_model_len)

    def run(self) -> None:
        due = self.ctx.step + TOKEN_STEPS   # (the output tokens told: `token_progress`)
        watch = ProgressWatch(self)         # (a run that gets nowhere stops: `progress_watch`)
        while self.advance():
            if self.ctx.step >= due:
                due = tell_output_tokens(self)
                watch.check()
        tell_output_tokens(self)
        self.finish()

    def advance(self) -> bool:
        """One turn: the arrivals, then one step (or a fast-forwarded stretch), or an idle turn.
        False when the loop is over (all done, or `max_steps`); `kvcore.cluster` calls it too."""
        ctx = self.ctx
        self.arrivals()
        if self.done():
            return False    # (as the oracle: no trailing step just to flush finished ids)
        max_steps = ctx.cfg.max_steps
        if self.waiting_for_arrival or not self.has_work():
            if ctx.cfg.arrivals != "step":
                return True
            # Idle steps count, and do nothing else: on to the next arrival's step at once
            # (an arrival_step of 10^12 idled that many turns, deaf to Ctrl-C when compiled),
            # not past max_steps (it reported the arrival's step as the steps run).
            ctx.step = max(ctx.step + 1, self.pending[0].arrival_step if self.pending else 0)
            if max_steps is None or ctx.step < max_steps:
                return True
            ctx.step = max_steps
        if max_steps is not None and ctx.step >= max_steps:
            ctx.warning(f"stopped after max_steps {max_steps}: the summary covers only "
                        "what ran by then")
            return False
        k = decode_stretch(self) if self.fast_forward else 0
        if not k or not run_stretch(self, k):
            self.step()
        return True

    def finish(self) -> None:
        """After the last turn: open decode windows caught up, mean usage, the warnings."""
        ctx = self.ctx
        self.sched.catch_up_all()
        ctx.summary.mean_usage = (self.usage_time / ctx.t_ms / max(self.num_usable, 1)
                                  if ctx.t_ms > 0 else 0.0)
        if self.sched.num_spec:
            ctx.summary.spec_decode = self.sched.spec_stats.as_dict()
        ctx.check_rejections(self.skipped)
        if ctx.cfg.arrivals == "timestamp":
            check_load(ctx)

    def done(self) -> bool:
        """Every request finished and none left to arrive (with the CPU tier: and the engine
        has nothing left to do, its transfers and last offers included, as vLLM keeps going)."""
        if self.tier is not None:
            return not self.pending and not self.sched.has_requests()
        return not self.pending and not self.sched.has_unfinished_requests()

    def has_work(self) -> bool:     # (else it idles until the next arrival)
        return self.sched.has_requests()

    def arrivals(self) -> None:
        """Add the requests that have arrived (`kvcore.engine.arrivals`)."""
        take_arrivals(self)

    def step(self) -> None:
        """One engine step: schedule, the fake model's tokens, update, account."""
        ctx = self.ctx
        sched = self.sched
        jsonl = ctx.jsonl
        pool = ctx.kvm.block_pool
        if jsonl is not None:
            jsonl.step, jsonl.t_ms = ctx.step, ctx.t_ms
        so = sched.schedule()
        if self.watcher is not None:
            self.watcher.scheduled(ctx.step, so)
        nst = so.num_scheduled_tokens
        tier = self.tier
        t_end = self.clock(so)
        if tier is not None:
            done, recv = tier.scheduled(ctx, so, t_end)
        if jsonl is not None:
            jsonl.t_ms = t_end
        finished = sched.update_from_output(so, self.sample)
        if sched.num_spec and so.total_num_scheduled_tokens:
            propose(sched, so)      # the runner's drafts for the next step (vLLM's post_step)
        self.account(so.eager, finished, t_end)
        if tier is not None:
            tier.deliver(sched, done, recv)
        if ctx.vllm is not None:
            ctx.vllm.batch(t_end / 1000.0, ctx.take_kv_events())
        line = None
        if ctx.steps_out is not None and (nst or so.preempted or tier is not None):
            line = {"step": ctx.step, "t_ms": round(t_end, 6), "scheduled": nst,
                    "admitted": so.admitted, "preempted": so.preempted, "finished": finished,
                    "num_free_blocks": pool.get_num_free_blocks()}
            if so.spec:
                line["drafts"] = so.spec        # speculative decoding's, verified this step
        if tier is not None:
            tier.end_step(sched, so.kv_meta, done, recv, line)
        if line is not None and ctx.steps_out is not None:
            ctx.steps_out.write(orjson.dumps(line) + b"\n")
        self.stall_guard(bool(nst or so.preempted))
        ctx.t_ms = t_end
        ctx.step += 1

    def clock(self, out: SchedulerOutput | None) -> float:
        """The end of a sync step (its batch run start to end); the usage integral on the way."""
        dt = batch_ms(self.ctx, out)
        self.usage_time += (self.num_usable - self.ctx.kvm.block_pool.get_num_free_blocks()) * dt
        return self.ctx.t_ms + dt

    def account(self, scheduled: list[Request], finished: list[str], t_end: float) -> None:
        """First-token and finish times of the step's requests (a decode window's: before)."""
        ctx = self.ctx
        records = ctx.records
        listener = self.listener
        for req in scheduled:
            rid = req.request_id
            rec = records[rid]
            if rec.first_token_ms is None and (rid in finished or req.num_output_tokens > 0):
                rec.first_token_ms = t_end
                if listener is not None:
                    listener.first_token(rid, t_end)
        for rid in finished:
            rec = records[rid]
            rec.finish_step = ctx.step
            rec.finish_ms = t_end
            if rec.first_token_ms is None:
                rec.first_token_ms = t_end
                if listener is not None:
                    listener.first_token(rid, t_end)
            if listener is not None:
                listener.finished(rid, t_end)
            ctx.finished(rec.tr)

    def stall_guard(self, progressed: bool) -> None:
        """After each step: `kvcore.engine.stall.guard` (a head never admitted, idle waits)."""
        guard(self, progressed)
