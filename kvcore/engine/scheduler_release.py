"""A request leaving the scheduler's running set, and its blocks with it: preempted (vLLM's
`_preempt_request`: back to the head of the waiting queue, to be recomputed from 0) or finished
(`_free_request`: the observer told, the connector's part done, the request forgotten).

Both free the request's blocks in every group (`free_request_blocks`): at once, or, under async
scheduling with a KV connector, deferred until no batch in flight reads them
(`kvcore.engine.deferred_frees`). The manager's tracer is told whose blocks go first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.engine.scheduler_offload import connector_finished
from kvcore.request import Request, RequestStatus

if TYPE_CHECKING:
    from kvcore.engine.scheduler import Scheduler


def preempt(sched: Scheduler, req: Request) -> None:
    """Free ``req``'s blocks and put it at the head of the waiting queue, 0 tokens computed
    (the caller has taken it out of ``running``)."""
    if req.decode_window_start <= req.decode_window_end:
        # (inside schedule() call num_schedules - 1: the last output is still the one before)
        sched.windows.catch_up(req, sched.num_schedules - 1,  # type: ignore[union-attr]
                               sched.last_output)
    if sched.observer is not None:
        sched.observer.on_preempt(req, req.num_computed_tokens)
    if sched.tracer is not None:
        sched.tracer.req = req.request_id
    free_request_blocks(sched, req)
    sched.inflight_prefills.discard(req)
    req.status = RequestStatus.PREEMPTED
    req.num_computed_tokens = 0
    # Async: the batch in flight still delivers its token (stale: no counter moves).
    req.num_stale_output_tokens = req.num_in_flight_tokens
    req.num_output_placeholders = 0
    req.num_spec_tokens = 0
    req.num_preemptions += 1
    sched.waiting.prepend(req)


def free_finished(sched: Scheduler, req: Request) -> None:
    """Release a request that just finished and forget it."""
    if sched.observer is not None:
        sched.observer.on_finish(req)
    if sched.tracer is not None:
        sched.tracer.req = req.request_id
    if sched.connector is not None:
        connector_finished(sched, req)
    free_request_blocks(sched, req)
    del sched.requests[req.request_id]
    if sched.decode_stagger:
        sched.decode_eligible.pop(req.request_id, None)


def free_request_blocks(sched: Scheduler, req: Request) -> None:
    if sched.deferred is not None:
        sched.deferred.free(req)
    else:
        sched.kv_cache_manager.free(req)
