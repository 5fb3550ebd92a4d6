"""`Scheduler.update_from_output`: the (fake) model's output of one scheduled batch; and
`advance_scheduled`, the step (C) of `Scheduler.schedule` that makes a batch of a plan.

Each request of the batch that samples gets one token; those at `max_tokens` (or
`max_model_len`) finish and are freed, in schedule order. Under async scheduling this runs one
step after the batch was scheduled: a token resolves a placeholder and caches the blocks that
completed batches computed, and a request preempted meanwhile still gets its (stale) token,
which may finish it while it waits. A request inside a decode window is not in the batch's
`eager` list: its steps need no update (`kvcore.engine.decode_windows`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kvcore.engine.decode_windows import restore_order
from kvcore.engine.scheduler_io import SchedulerOutput
from kvcore.engine.scheduler_release import free_finished
from kvcore.engine.spec_decode import take_tokens
from kvcore.request import Request, RequestStatus

if TYPE_CHECKING:
    from kvcore.engine.scheduler import Scheduler


def advance_scheduled(sched: Scheduler, out: SchedulerOutput, plain: int, now: int) -> None:
    """Step (C) of `schedule()`: every scheduled request's computed (and in-flight) tokens
    advance at schedule time; one that reaches the end of its known tokens (plus placeholders)
    samples, and under async gets a placeholder for that token. `plain`: the decodes inside
    decode windows (in no `eager` list), `now`: the schedule() call's index."""
    nst = out.num_scheduled_tokens
    eager = out.eager
    conn = sched.connector
    total = plain
    sampling = out.sampling
    placeholders = sched.config.async_scheduling
    if sched.deferred is not None and (plain or nst):
        sched.deferred.scheduled(eager)
    out.plain_decodes = plain
    if plain:
        # The clock's contexts of the window requests (an aggregate, see DecodeWindows).
        windows = sched.windows
        assert windows is not None and windows.agg_n == plain
        out.plain_context = windows.context_after(now)
    spec = sched.num_spec
    for req in eager:
        rid = req.request_id
        n = nst[rid]
        c = req.num_computed_tokens = req.num_computed_tokens + n
        req.num_in_flight_tokens += n
        # (before this step's placeholders: vLLM's is_prefill_chunk, which also drops an
        # in-flight prefill below, is set before the AsyncScheduler adds them)
        prefilling = c < req.num_tokens + req.num_output_placeholders
        if spec:
            req.is_prefill_chunk = prefilling
        if not prefilling:
            sampling.add(rid)
            if placeholders:
                if spec:
                    # the sampled token and the drafts verified are in flight; the next
                    # step's drafts are placeholders the GPU fills (the AsyncScheduler's)
                    req.num_output_placeholders += 1 + out.spec.get(rid, 0)
                    req.num_spec_tokens = spec
                else:
                    req.num_output_placeholders += 1
                if sched.decode_stagger:
                    sched.decode_eligible[rid] = now + sched.decode_stagger
        total += n
        if conn is not None and not prefilling:
            sched.inflight_prefills.discard(req)    # no longer prefilling
    out.total_num_scheduled_tokens = total


def update_from_output(sched: Scheduler, out: SchedulerOutput,
                       sample: Callable[[Request], int]) -> list[str]:
    """Apply batch ``out``'s output to ``sched``'s requests (see the module docstring); return
    the ids of those it finished, in schedule order."""
    max_len = sched.config.max_model_len
    requests = sched.requests
    kvm = sched.kv_cache_manager
    tracer = sched.tracer
    sampling = out.sampling
    finished: list[str] = []
    waiting_done: set[str] = set()
    nst = out.num_scheduled_tokens
    windows = sched.windows if sched.windows_on else None
    spec = sched.num_spec
    now = sched.num_schedules
    if out.returned:            # back from decode windows: the schedule's order again
        restore_order(out)
    if sched.deferred is not None and out.total_num_scheduled_tokens > 0:
        sched.deferred.processed()
    for scheduled in out.eager:             # (a decode window's steps need no update)
        rid = scheduled.request_id
        req = requests.get(rid)
        if req is None:
            continue            # finished before this batch's output came back
        n = nst[rid]
        req.num_in_flight_tokens -= n
        stale = req.num_stale_output_tokens > 0
        if stale:
            req.num_stale_output_tokens -= n
        if rid not in sampling:
            continue            # a prefill chunk samples nothing
        running = req.status == RequestStatus.RUNNING
        if spec:
            stopped = take_tokens(sched, out, req, stale, sample)
        else:
            had_placeholders = req.num_output_placeholders > 0
            req.append_output_token_ids(sample(req))
            if not stale and had_placeholders:
                req.num_output_placeholders -= 1
                if running and kvm.enable_caching:
                    if tracer is not None:
                        tracer.req = rid
                    kvm.cache_blocks(req, req.num_computed_tokens - req.num_in_flight_tokens)
            # (The scheduler's requests always carry max_tokens.)
            stopped = req.num_tokens >= max_len or \
                req.num_output_tokens >= req.max_tokens  # type: ignore[operator]
        if stopped:
            req.status = RequestStatus.FINISHED_LENGTH_CAPPED
            finished.append(rid)
            if not running:
                waiting_done.add(rid)
            free_finished(sched, req)
        elif windows is not None:
            windows.open(req, now)
    if finished:
        done = set(finished)
        sched.running = [r for r in sched.running if r.request_id not in done]
        if waiting_done:
            sched.waiting.remove(waiting_done)
        sched.finished_req_ids |= done
    return finished
