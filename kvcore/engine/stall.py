"""A waiting request the engine can never admit, told at once when that is certain.

vLLM's scheduler refuses such a head every step and waits forever: nothing it waits for can
change. The replay proves it after one refusal when every step to come must repeat the one just
taken (`never_admitted`), then stops with one line or, with ``skip_bad``, rejects the request
and goes on (`refuse`). What it cannot prove at once (a CPU tier's transfers; a pool that
something in flight still holds) is caught after `STALL_STEPS` idle steps (`stalled`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from kvcore.errors import InputError

if TYPE_CHECKING:
    from kvcore.engine.engine_loop import EngineLoop

STALL_STEPS = 1000      # idle steps, nothing schedulable, before the replay gives up


def guard(loop: EngineLoop, progressed: bool) -> None:
    """After each engine step: nothing can ever be scheduled again (a head no empty pool
    admits) and vLLM would spin forever. Bad input, or with skip_bad a rejection, as soon as it
    is certain, else after `STALL_STEPS` idle steps with nothing left to arrive."""
    if progressed or loop.sched.running or (
            loop.tier is not None and loop.tier.conn.jobs):     # a transfer will finish
        loop.idle_run = 0
        return
    head = never_admitted(loop)
    if head is not None:
        refuse(loop, head)
    if head is not None or loop.pending:
        loop.idle_run = 0
        return
    loop.idle_run += 1
    if loop.idle_run > STALL_STEPS:
        raise stalled(loop, STALL_STEPS)


def never_admitted(loop: EngineLoop) -> Any:
    """The waiting head when it can never be admitted, else None.

    Certain when this step's schedule() refused the head with nothing running, the whole token
    budget and every usable block free, and no CPU tier: the next schedule() then sees the same
    pool, budget and seats, and under FCFS a refused head lets nothing behind it run, so its
    prefix hit cannot change either. Two things could still change its chunk or overtake it, so
    while requests are still to arrive it must also be FCFS without a long-prefill threshold
    (the threshold, adaptive or not, depends on how many requests wait)."""
    sched = loop.sched
    blocked = sched.blocked
    cfg = sched.config
    if (blocked is None or sched.running or loop.tier is not None or len(sched.waiting) == 0
            or blocked[0] is not sched.waiting.peek()
            or blocked[2] != cfg.max_num_batched_tokens
            or loop.ctx.kvm.block_pool.get_num_free_blocks() != loop.num_usable):
        return None
    # (a cluster's replica learns of its requests as they are routed: its `horizon_ms` is the
    # next arrival anywhere, inf once none is left, as the decode fast-forward reads it)
    to_come = bool(loop.pending) or loop.horizon_ms != math.inf
    if to_come and (sched.policy != "fcfs" or cfg.long_prefill_token_threshold > 0):
        return None
    return blocked[0]


def refuse(loop: EngineLoop, head: Any) -> None:
    """`head` can never be admitted: bad input, or with ``skip_bad`` rejected like a request
    that can never fit (taken out of the waiting queue; it holds no block). A request that ran
    before (preempted, now refused) is never skipped: its tokens are already counted."""
    ctx = loop.ctx
    rid = head.request_id
    rec = ctx.records[rid]
    why = (f"can never be admitted: refused with nothing running and all {loop.num_usable:,} "
           f"usable blocks free (num_blocks {ctx.num_blocks:,})")
    if not ctx.cfg.skip_bad or rec.first_scheduled_step is not None:
        ran = rec.first_scheduled_step is not None
        raise InputError(f"request {rid!r} {why}: vLLM would wait forever; give more num_blocks",
                         path=ctx.trace.path, line=rec.tr.line, field="num_blocks",
                         remedy=None if ran else ("skip_bad", "skips such requests"))
    sched = loop.sched
    sched.waiting.remove({rid})
    del sched.requests[rid]
    ctx.kvm.free(head)      # (a refused allocation may have left an empty table behind)
    loop.skipped.append((rec.tr.line, why))
    ctx.reject(rec.tr, why)


def stalled(loop: EngineLoop, steps: int) -> InputError:
    """The error of an engine that scheduled nothing for `steps` steps with the same head first
    in its waiting queue, a stall `never_admitted` could not prove at once."""
    ctx = loop.ctx
    tr = ctx.records[loop.sched.waiting.peek().request_id].tr
    blind = ("; with a CPU tier skip_bad cannot tell in advance"
             if ctx.cfg.skip_bad and loop.tier is not None else "")
    return InputError(f"request {tr.id!r} can never be admitted (stalled for {steps} steps with "
                      f"nothing running: vLLM would wait forever): the pool of "
                      f"{ctx.num_blocks:,} blocks never has room for it; give more num_blocks"
                      f"{blind}", path=ctx.trace.path, line=tr.line)
