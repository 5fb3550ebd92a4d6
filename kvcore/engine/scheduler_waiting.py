"""(B) of `Scheduler.schedule()` without a KV connector: the waiting requests, only in a step
that preempted nobody (`kvcore.engine.scheduler`'s docstring has the rules; with a connector
the scan is `scheduler_offload.schedule_waiting_with_connector`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvcore.engine.spec_decode import check_padding, note_drafts_needed, pad_admission
from kvcore.request import Request, RequestStatus

if TYPE_CHECKING:
    from kvcore.engine.scheduler import Scheduler
    from kvcore.engine.scheduler_io import SchedulerOutput


def schedule_waiting(sched: Scheduler, out: SchedulerOutput, budget: int, threshold: int) -> int:
    """Admit waiting requests into ``out`` while the budget, the seats and the pool allow; the
    budget left."""
    cfg = sched.config
    kvm = sched.kv_cache_manager
    obs = sched.observer
    tracer = sched.tracer
    running = sched.running
    nst = out.num_scheduled_tokens
    eager = out.eager
    waiting = sched.waiting
    skipped: list[Request] = []
    spec = sched.num_spec
    any_running = bool(nst)     # (so far only the running loop's requests are in it)
    while budget > 0 and len(waiting) > 0:
        if len(running) >= sched.max_num_active:
            break
        head: Any = waiting.peek()
        if head.__class__ is not Request:
            # A lazily built request (see `LazyRequest`): build it now that it is next.
            head = head.build()
            waiting.replace_head(head)
            sched.requests[head.request_id] = head
        req = head
        if req.num_stale_output_tokens:
            # Preempted with a batch still in flight (a pipeline's depth: 3 batches or more):
            # resuming now could sample a position that batch's output delivers. vLLM skips
            # it this step, keeping its place in the queue.
            skipped.append(waiting.pop())
            continue
        hit_blocks, num_hit, req.shared_prefix_boundary = kvm.get_computed_blocks(req)
        taken = admission_tokens(sched, req, num_hit, budget, threshold, any_running)
        if taken is None:
            sched.blocked = (req, False, budget)
            break
        n, padded = taken
        if tracer is not None:
            tracer.req = req.request_id
        if obs is not None:
            obs.on_admit_attempt(req)
        new_blocks = kvm.allocate_slots(
            req, n, num_new_computed_tokens=num_hit, new_computed_blocks=hit_blocks,
            num_lookahead_tokens=sched.lookahead,
            full_sequence_must_fit=cfg.scheduler_reserve_full_isl,
            has_scheduled_reqs=bool(running))
        if new_blocks is None:
            if obs is not None:
                obs.on_admit_failed(req)
            sched.blocked = (req, True, budget)
            break
        if padded:
            check_padding(req, n, spec, threshold)
        kvm.record_prefix_cache_stats(req, num_hit)
        waiting.pop()
        running.append(req)
        resumed = req.status == RequestStatus.PREEMPTED
        req.status = RequestStatus.RUNNING
        req.num_computed_tokens = num_hit
        if req.num_cached_tokens < 0:
            req.num_cached_tokens = num_hit
        nst[req.request_id] = n
        if spec:
            note_drafts_needed(req, num_hit, n, out)
        if padded:
            out.spec[req.request_id] = spec      # (placeholders: `SchedulerOutput.spec`)
        eager.append(req)
        out.admitted[req.request_id] = num_hit
        budget -= n
        if obs is not None:
            obs.on_admit(req, num_hit, resumed)
    for req in reversed(skipped):
        waiting.prepend(req)
    return budget


def admission_tokens(sched: Scheduler, req: Request, computed: int, budget: int,
                     threshold: int, any_running: bool) -> tuple[int, bool] | None:
    """The tokens vLLM's waiting loop schedules for ``req`` past its ``computed`` ones (with
    a KV connector too), and whether they pad a one-token admission with K placeholder
    drafts; None where the request stops the queue's scan this step."""
    spec = sched.num_spec
    n = req.num_tokens - computed
    padded = False
    if spec and n == 1:
        n = pad_admission(sched, computed, budget, sched.prefill_scheduled, any_running)
        if n < 0:
            return None     # vLLM schedules no unpadded decode rather than break the graph
        padded = n > 1
    if 0 < threshold < n:
        # (a padded admission cut here stays `padded`: vLLM asserts only once it is admitted,
        # `check_padding`; a Mamba split below, or a failed allocation, comes first)
        n = threshold
    if not sched.config.enable_chunked_prefill and n > budget:
        return None         # no skipping ahead when chunking is off
    n = min(n, budget)
    if sched.mamba.block_size:
        n = sched.mamba.split(req, n, computed)
        if n == 0:
            return None     # no block-aligned chunk fits what is left of the budget
        if padded and n != 1 + spec:
            n, padded = 1, False    # the alignment cut the drafts: unpadded, as vLLM
    return n, padded
