"""How long a scheduled batch runs on the replay's clock (`kvcore.clock`), both loops' steps
(`engine_loop.py` at each step, `async_loop.py` as it queues a batch).

A clock that bills counts alone (the linear one) gets the batch's prefill tokens and decodes; one
that bills each request (`cost.per_request`: the roofline, windowed layers' clamped contexts)
gets a `StepBatch` of them, with the plain decodes the scheduler counted in aggregate. On the
way, a request's first scheduled step and time are noted in its record (its queueing time).
"""

from __future__ import annotations

from kvcore.clock.batch import StepBatch
from kvcore.engine.context import ReplayContext
from kvcore.engine.scheduler_io import SchedulerOutput


def batch_ms(ctx: ReplayContext, out: SchedulerOutput | None) -> float:
    """How long the batch takes (None: nothing scheduled); first scheduled steps noted."""
    records = ctx.records
    cost = ctx.cost
    prefill = decodes = 0
    batch = StepBatch() if cost.per_request else None
    if out is not None:
        nst = out.num_scheduled_tokens
        decodes = out.plain_decodes
        for req in out.eager:
            rid = req.request_id
            n = nst[rid]
            rec = records[rid]
            if rec.first_scheduled_step is None:
                rec.first_scheduled_step = ctx.step
                rec.first_scheduled_ms = ctx.t_ms
            # (computed tokens have advanced at schedule time: the context after the step)
            is_decode = n == 1 and req.num_computed_tokens > req.num_prompt_tokens
            if is_decode:
                decodes += 1
            else:
                prefill += n
            if batch is not None:
                batch.requests.append((n, req.num_computed_tokens, not is_decode))
        if batch is not None:
            batch.agg_decodes = out.plain_decodes
            batch.agg_context = out.plain_context
    return cost.step_counts(prefill, decodes) if batch is None else cost.step_ms(batch)
