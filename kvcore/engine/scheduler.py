"""vLLM 0.33's V1 `Scheduler`, the parts that decide what the KV cache sees.

One `schedule()` call is one engine step's plan:

(A) RUNNING requests first, in list order, while token budget remains. Each asks for the tokens
    it is behind (`num_tokens - num_computed_tokens`), capped by `long_prefill_token_threshold`
    (ignored when only one request is eligible, 0.33), by the budget and by
    `max_model_len - num_computed_tokens - 1`. If `allocate_slots` refuses, preempt: FCFS takes
    the LAST running request, PRIORITY the max `(priority, arrival_time)` (undoing its schedule
    if it was already scheduled this step). A preempted request frees its blocks (they stay
    cached), drops `num_computed_tokens` to 0 (recompute) and goes to the head of `waiting`.
    A request that preempts itself stops the loop (under PRIORITY the loop goes on).
(B) WAITING requests, only if nothing was preempted in (A): look up the prefix cache, cap the
    tokens as above (with chunked prefill off a request that does not fit the budget stops the
    loop), and admit if `allocate_slots(..., full_sequence_must_fit)` accepts; otherwise stop.
    Waiting requests never preempt running ones. Prefix-cache stats are recorded at admission.
(C) Every scheduled request's `num_computed_tokens` advances at once (`_update_after_schedule`).

`update_from_output` appends the sampled token of every request that reached the end of its known
tokens, finishes those at `max_tokens` (or `max_model_len`), frees them in schedule order and
returns the finished ids (a preempted or finished request's release: `scheduler_release`). An optional observer hears admissions, preemptions and finishes (the
replay's event stream); the manager's tracer gets `req` set before each call on a request's behalf.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from kvcore.engine.decode_windows import DecodeWindows
from kvcore.engine.deferred_frees import DeferredFrees
from kvcore.engine.mamba_split import MambaSplit
from kvcore.engine.queues import QUEUES, FCFSQueue, PriorityQueue, priority_order
from kvcore.engine.scheduler_io import (
    NO_MODEL_LEN_LIMIT,
    LazyRequest,
    SchedulerConfig,
    SchedulerObserver,
    SchedulerOutput,
    max_concurrent_batches,
)
from kvcore.engine.scheduler_offload import schedule_waiting_with_connector
from kvcore.engine.scheduler_release import preempt
from kvcore.engine.scheduler_update import advance_scheduled, update_from_output
from kvcore.engine.scheduler_waiting import schedule_waiting
from kvcore.engine.spec_decode import SpecStats, lookahead_tokens, spec_scheduled
from kvcore.kv_cache_manager import KVCacheManager
from kvcore.offload.stores import build_connector_meta
from kvcore.request import Request, RequestStatus

__all__ = ["NO_MODEL_LEN_LIMIT", "LazyRequest", "Scheduler", "SchedulerConfig",
           "SchedulerObserver", "SchedulerOutput"]

def _no_drafts(req: Request, num_drafts: int) -> int:
    raise AssertionError("speculative decoding without an acceptance model")


class Scheduler:
    def __init__(self, config: SchedulerConfig, kv_cache_manager: KVCacheManager, *,
                 tracer: Any = None, observer: SchedulerObserver | None = None) -> None:
        self.config = config
        self.kv_cache_manager = kv_cache_manager
        self.tracer = tracer
        self.observer = observer
        self.policy = config.policy
        self.waiting = cast(FCFSQueue | PriorityQueue, QUEUES[config.policy]())
        self.running: list[Request] = []
        self.requests: dict[str, Request] = {}
        # Mamba groups in vLLM's ``align`` cache mode (prefix caching on): prefill chunks are
        # clipped to block size `mamba.block_size` (`kvcore.engine.mamba_split`); 0: no clip.
        self.mamba = MambaSplit(kv_cache_manager, config)
        self.max_num_active = (config.max_num_active_seqs if config.max_num_active_seqs
                               is not None else config.max_num_seqs)
        self.finished_req_ids: set[str] = set()
        # The waiting head this step's schedule() could not admit, and whether it got as far as
        # an allocation attempt (the decode fast-forward repeats a refusal only when it must).
        self.blocked: tuple[Request, bool, int] | None = None       # (+ the budget left)
        # Decode windows (`kvcore.engine.decode_windows`), counted in schedule() calls: the
        # engine loop sets `windows` (used under FCFS only: the rules assume it); `windows_on`:
        # the last schedule() used them; `last_output`: its output (under async its batch is
        # still queued while the next one schedules).
        self.windows: DecodeWindows | None = None
        self.last_output: SchedulerOutput | None = None
        self.num_schedules = 0
        # V2+PP+async: a request that samples in schedule() call k decodes again at call
        # k + PP at the earliest (vLLM's `next_decode_eligible_step`: the worker's ring of
        # sampled tokens); request id -> that call. 0: no stagger (PP 1, or sync).
        pp = config.pipeline_parallel_size
        self.decode_stagger = pp if config.async_scheduling and pp > 1 else 0
        self.decode_eligible: dict[str, int] = {}
        # Speculative decoding (`kvcore.engine.spec_decode`): the drafts a decode verifies (0:
        # off); `accept(req, drafts)`: the fake model's accepted count, set by the engine loop;
        # whether a running prefill chunk is in the step being scheduled (no padded decodes).
        self.num_spec = config.num_speculative_tokens
        self.lookahead = lookahead_tokens(config)
        self.accept: Callable[[Request, int], int] = _no_drafts
        self.spec_stats = SpecStats()
        self.prefill_scheduled = False
        self.windows_on = False
        # A KV connector (`kvcore.offload`; None: vLLM without one), set by the engine loop
        # with `attach_connector`; its waiting scan is `scheduler_offload.schedule_waiting`.
        self.connector: Any = None
        self.kv_holding = cast(FCFSQueue | PriorityQueue, QUEUES[config.policy]())
        self.finished_recving: set[str] = set()     # async loads the worker reported
        # a request its finished load left at 0 computed tokens (`kvcore.engine.stall.reloads`)
        self.reloaded: str | None = None
        self.inflight_prefills: set[Request] = set()
        self.finished_order: list[str] = []         # finished_req_ids in finish order
        self.connector_stats: Any = None
        # vLLM's deferred block frees (a batch queue with a connector), or None
        self.deferred: DeferredFrees | None = None

    def attach_connector(self, connector: Any, stats: Any) -> None:
        self.connector = connector
        self.connector_stats = stats
        # (any batch queue deeper than one: async or PP, v1/core/sched/scheduler.py:189-195)
        if max_concurrent_batches(self.config.async_scheduling,
                                  self.config.pipeline_parallel_size) > 1:
            self.deferred = DeferredFrees(self.kv_cache_manager)

    # -- queue state -----------------------------------------------------------------------------
    def add_request(self, req: Request | LazyRequest) -> None:
        self.waiting.add(req)
        # A LazyRequest stands here until it is built (then its Request replaces it).
        self.requests[req.request_id] = req  # type: ignore[assignment]

    def has_unfinished_requests(self) -> bool:
        return bool(self.running) or len(self.waiting) > 0 or len(self.kv_holding) > 0

    def has_requests(self) -> bool:
        # vLLM keeps stepping once more after a finish (to flush finished ids; with a connector
        # that step makes the finished requests' last offers), and while transfers are in flight.
        return self.has_unfinished_requests() or bool(self.finished_req_ids) or (
            self.connector is not None and self.connector.has_pending_work())

    # -- (A) + (B) + (C) ---------------------------------------------------------------------------
    def schedule(self) -> SchedulerOutput:
        cfg = self.config
        kvm = self.kv_cache_manager
        tracer = self.tracer
        out = SchedulerOutput()
        self.blocked = None
        now = self.num_schedules
        self.num_schedules = now + 1
        windows = self.windows
        on = self.windows_on = (windows is not None and self.policy == "fcfs"
                                 and windows.usable())
        if windows is not None:
            windows.expire(now)
        last = self.last_output
        eager = out.eager
        plain = 0
        nst = out.num_scheduled_tokens
        budget = cfg.max_num_batched_tokens
        max_len = cfg.max_model_len
        running = self.running
        scheduled_running: list[Request] = []

        # (vLLM counts the requests held for their KV loads as waiting too)
        num_eligible = len(running) + len(self.waiting) + len(self.kv_holding)
        # The threshold stops a long prefill from starving others; alone, nobody starves.
        threshold = cfg.long_prefill_token_threshold if num_eligible > 1 else 0
        if threshold > 0 and cfg.long_prefill_token_threshold_adaptive:
            threshold = max(threshold, cfg.max_num_batched_tokens // num_eligible)

        self.prefill_scheduled = False
        lookahead = self.lookahead
        mamba_bs = self.mamba.block_size
        if mamba_bs:
            kvm.new_step_starts()

        # (A) running requests.
        i = 0
        while i < len(running) and budget > 0:
            req = running[i]
            if req.decode_window_end >= now:
                # Inside its decode window: this step's whole effect on it (see decode_windows).
                nst[req.request_id] = 1
                budget -= 1
                plain += 1
                i += 1
                continue
            if req.decode_window_start <= req.decode_window_end:
                windows.catch_up(req, now, last)  # type: ignore[union-attr]
            ph = req.num_output_placeholders
            if ph and req.num_computed_tokens + 2 - ph >= \
                    req.num_prompt_tokens + req.max_tokens:  # type: ignore[operator]
                # Async: the token in flight is its last; no step past max_tokens.
                i += 1
                continue
            if self.decode_stagger and now < self.decode_eligible.get(req.request_id, 0):
                i += 1                          # not its turn in the pipeline yet
                continue
            # Under async the newest position's token is still in flight (a placeholder); with
            # speculative decoding its drafts follow its known tokens.
            n = req.num_tokens + req.num_spec_tokens + ph - req.num_computed_tokens
            if 0 < threshold < n:
                n = threshold
            n = min(n, budget, max_len - req.num_computed_tokens - 1)
            if mamba_bs and n > 0:
                n = self.mamba.split(req, n, req.num_computed_tokens)
            if n <= 0:
                # Nothing to do for it now; `continue`, not `break`, so later ones still run.
                i += 1
                continue
            while True:
                if tracer is not None:
                    tracer.req = req.request_id
                new_blocks = kvm.allocate_slots(req, n, num_lookahead_tokens=lookahead)
                if new_blocks is not None:
                    break
                victim = max(running, key=priority_order) if self.policy == "priority" \
                    else running[-1]
                if self.deferred is not None and not self.deferred.can_free(victim, now):
                    break       # its blocks are held by a batch in flight: it frees nothing
                if self.policy == "priority":
                    idx = running.index(victim)
                    del running[idx]
                    if idx < i:
                        i -= 1
                    if victim in scheduled_running:
                        scheduled_running.remove(victim)
                        budget += nst.pop(victim.request_id)
                        out.spec.pop(victim.request_id, None)
                else:
                    running.pop()
                preempt(self, victim)
                out.preempted.append(victim.request_id)
                if victim is req:
                    break
            if new_blocks is None:
                if self.policy == "priority" and req.status == RequestStatus.PREEMPTED:
                    # It preempted itself; the ones after it rank higher and may still fit.
                    continue
                break
            scheduled_running.append(req)
            nst[req.request_id] = n
            budget -= n
            i += 1
            if self.num_spec:
                spec_scheduled(self, req, n, out)
        if on and i < len(running):
            # The budget ran out before these: their windows stop at the last step.
            windows.catch_up_all(running[i:], now, last)  # type: ignore[union-attr]

        # (B) waiting requests, only in a step that preempted nobody.
        conn = self.connector
        admitted_full: set[str] = set()
        if conn is not None:
            if not out.preempted:
                budget = schedule_waiting_with_connector(self, out, budget, threshold,
                                                         admitted_full)
            eager[:0] = scheduled_running
            out.kv_meta = build_connector_meta(conn, nst, eager, admitted_full, out.preempted,
                                               self.finished_order)
            self.finished_order = []
        else:
            if not out.preempted:
                budget = schedule_waiting(self, out, budget, threshold)
            eager[:0] = scheduled_running

        assert len(running) <= cfg.max_num_seqs
        if self.mamba.unit:
            # The step's copy-on-writes have run with it: their held ends go (vLLM's
            # `_free_cow_retained_blocks`; deferred with the tier under async scheduling).
            cow = kvm.coordinator.take_cow_blocks()
            (self.deferred.free_copies if self.deferred else kvm.block_pool.free_blocks)(cow)
        # (C) computed (and in-flight) tokens advance at schedule time
        advance_scheduled(self, out, plain, now)
        self.finished_req_ids = set()
        self.last_output = out
        return out

    def catch_up_all(self) -> None:
        """Apply every open decode window's steps so far (before anything reads the running
        requests from outside: the fast-forward, the end of the run)."""
        if self.windows is not None:
            self.windows.catch_up_all(self.running, self.num_schedules, self.last_output)

    # -- after the (fake) model ran -------------------------------------------------------------
    def update_from_output(self, out: SchedulerOutput,
                           sample: Callable[[Request], int]) -> list[str]:
        """The output of batch ``out`` (`kvcore.engine.scheduler_update`); the ids of the
        requests it finished, in schedule order."""
        return update_from_output(self, out, sample)
