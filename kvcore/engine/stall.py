"""A waiting request the engine can never admit, told at once when that is certain.

vLLM's scheduler refuses such a head every step and waits forever: nothing it waits for can
change. The replay proves it after one refusal when every step to come must repeat the one just
taken (`blocked_head`, `certain`), then stops with one line or, with ``skip_bad``, rejects the
request and goes on (`refuse`). Idle steps it cannot prove stuck (an arrival could still lift
the refusal; a CPU tier is attached) are stepped as vLLM steps them, and after `STALL_STEPS`
the engine waits for the next arrival at once (`EngineLoop.waiting_for_arrival`: a gap of hours
was millions of idle steps), or with none left to come stops the run (`stalled`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from kvcore.errors import InputError

if TYPE_CHECKING:
    from kvcore.engine.engine_loop import EngineLoop

STALL_STEPS = 1000      # idle steps, nothing schedulable, before the replay gives up (or waits)


def guard(loop: EngineLoop, progressed: bool) -> None:
    """After each engine step: a head that can never be admitted is bad input, or with
    skip_bad a rejection, as soon as that is certain; after `STALL_STEPS` idle steps otherwise,
    the engine waits for the next arrival, or with none left to come stops."""
    if progressed or loop.sched.running:
        loop.idle_run = loop.transfer_idle = loop.reload_idle = 0
        loop.waiting_for_arrival = False
        loop.sched.reloaded = None
        return
    to_come = bool(loop.pending) or loop.next_arrival_ms != math.inf
    if loop.sched.reloaded is not None:     # a 1-token prompt loading its chunk again and again
        # (only while every transfer in flight is a 1-token prompt's load: a store, or another
        # request's load, could still evict its chunk through the stores that follow)
        jobs = loop.tier.conn.jobs.values() if loop.tier is not None else ()
        reqs = loop.sched.requests
        quiet = all(not j.is_store and j.req_id in reqs and reqs[j.req_id].num_tokens == 1
                    for j in jobs)
        loop.reload_idle = loop.reload_idle + 1 if quiet else 0
        if loop.reload_idle > STALL_STEPS and not to_come:
            raise reloads(loop, loop.sched.reloaded)
    if loop.tier is not None and loop.tier.conn.jobs:     # a transfer will finish
        loop.idle_run = 0
        loop.waiting_for_arrival = False
        loop.transfer_idle += 1
        if loop.transfer_idle > STALL_STEPS:
            # idle steps that cost nothing (a clock of 0 ms an empty step) never reach the
            # transfer's end on the clock (it looped for ever): on to it at once
            loop.transfer_idle = 0
            loop.transfer_wait_ms = loop.tier.worker.next_done_ms() or 0.0
        return
    # (a cluster's replica learns of its requests as they are routed: `next_arrival_ms` is the
    # next one anywhere, inf once none is left)
    head = blocked_head(loop)
    if head is not None and certain(loop, to_come):
        refuse(loop, head)
        loop.idle_run = 0
        return
    # Not provably stuck (an arrival may lift it, or a CPU tier is attached): step on as vLLM
    # does; after STALL_STEPS idle steps wait for the next arrival at once, or with none left
    # to come, stop (nothing else changed in all those steps).
    loop.idle_run += 1
    if loop.idle_run > STALL_STEPS:
        if not to_come:
            raise stalled(loop, STALL_STEPS)
        loop.waiting_for_arrival = True


def blocked_head(loop: EngineLoop) -> Any:
    """The waiting head when this step's schedule() refused it with nothing running, the whole
    token budget and every usable block free, and no CPU tier; else None. The next schedule()
    then sees the same pool, budget and seats."""
    sched = loop.sched
    blocked = sched.blocked
    if (blocked is None or sched.running or loop.tier is not None or len(sched.waiting) == 0
            or blocked[0] is not sched.waiting.peek()
            or blocked[2] != sched.config.max_num_batched_tokens
            or loop.ctx.kvm.block_pool.get_num_free_blocks() != loop.num_usable):
        return None
    return blocked[0]


def certain(loop: EngineLoop, to_come: bool) -> bool:
    """Whether a `blocked_head` stays refused forever. Under FCFS a refused head lets nothing
    behind it run, so its prefix hit cannot change either. Two things can still lift it while
    requests are to arrive: under the priority policy one may overtake it and cache its prefix,
    and a long-prefill threshold (adaptive or not) cuts its chunk once others wait."""
    cfg = loop.sched.config
    return not to_come or (loop.sched.policy == "fcfs" and cfg.long_prefill_token_threshold <= 0)


def _why(loop: EngineLoop, head: Any) -> tuple[str, str, str]:
    """(what refuses the head, the field to change, the change) for its error."""
    cfg = loop.sched.config
    blocked = loop.sched.blocked
    if blocked is not None and blocked[0] is head and not blocked[1]:
        # refused before the pool was asked: its chunk does not fit the token budget
        chunk = ("with chunked prefill off its prefill is one chunk"
                 if not cfg.enable_chunked_prefill else "no chunk aligned to its Mamba blocks fits")
        what = (f"its prompt of {head.num_tokens:,} tokens never fits max_num_batched_tokens "
                f"{cfg.max_num_batched_tokens:,} ({chunk})")
        return what, "max_num_batched_tokens", "give more max_num_batched_tokens"
    what = (f"refused with nothing running and all {loop.num_usable:,} usable blocks free "
            f"(num_blocks {loop.ctx.num_blocks:,})")
    return what, "num_blocks", "give more num_blocks"


def refuse(loop: EngineLoop, head: Any) -> None:
    """`head` can never be admitted: bad input, or with ``skip_bad`` rejected like a request
    that can never fit (taken out of the waiting queue; it holds no block). A request that ran
    before (preempted, now refused) is never skipped: its first admission is in the hit rate."""
    ctx = loop.ctx
    rid = head.request_id
    rec = ctx.records[rid]
    what, field, fix = _why(loop, head)
    if rec.first_scheduled_step is not None:
        raise InputError(f"request {rid!r} ran, was preempted, and can never be re-admitted: "
                         f"{what}: vLLM would wait forever; {fix} (skip_bad skips only requests "
                         "that never ran)", path=ctx.trace.label, line=rec.tr.line, field=field)
    why = f"can never be admitted: {what}"
    if not ctx.cfg.skip_bad:
        raise InputError(f"request {rid!r} {why}: vLLM would wait forever; {fix}",
                         path=ctx.trace.label, line=rec.tr.line, field=field,
                         remedy=("skip_bad", "skips such requests"))
    sched = loop.sched
    sched.waiting.remove({rid})
    del sched.requests[rid]
    ctx.kvm.free(head)      # (a refused allocation may have left an empty table behind)
    loop.skipped.append((rec.tr.line, why))
    ctx.reject(rec.tr, why)


def reloads(loop: EngineLoop, rid: str) -> InputError:
    """vLLM 0.33's endless reload: a 1-token prompt whose token is a whole CPU chunk (chunks of
    one token) hits in full; once loaded, `_update_waiting_for_remote_kv` recomputes its last
    token (v1/core/sched/scheduler.py:3515-3516: T - 1 = 0 computed tokens), so the next
    schedule() looks it up again as a new request (scheduler.py:1110) and loads it again, for
    as long as the chunk stays in the tier: with nothing left to run or arrive, for ever."""
    tr = loop.ctx.records[rid].tr
    return InputError(f"request {rid!r} (a 1-token prompt whose token is a whole CPU chunk) is "
                      f"loaded again and again: vLLM 0.33 leaves it 0 computed tokens after "
                      f"the load and looks it up anew, for ever (stuck for {STALL_STEPS} "
                      "steps); give chunks of more than one token (offload_block_size)",
                      path=loop.ctx.trace.label, line=tr.line, field="offload_block_size")


def stalled(loop: EngineLoop, steps: int) -> InputError:
    """The error of an engine that scheduled nothing for `steps` steps with the same head first
    in its waiting queue, a stall `blocked_head` could not prove at once."""
    ctx = loop.ctx
    if len(loop.sched.kv_holding):
        return _holding_stalled(loop, steps)
    head = loop.sched.waiting.peek()
    tr = ctx.records[head.request_id].tr
    what, field, fix = _why(loop, head)
    if field == "num_blocks":
        what = f"the pool of {ctx.num_blocks:,} blocks never has room for it"
    blind = ("; with a CPU tier skip_bad cannot tell in advance"
             if ctx.cfg.skip_bad and loop.tier is not None else "")
    return InputError(f"request {tr.id!r} can never be admitted (stalled for {steps} steps with "
                      f"nothing running: vLLM would wait forever): {what}; {fix}{blind}",
                      path=ctx.trace.label, line=tr.line, field=field)


def _holding_stalled(loop: EngineLoop, steps: int) -> InputError:
    """A stall of the requests that hold blocks for a CPU load (`kv_holding`): the scan takes
    them before the waiting queue and stops at a head the pool refuses, so the blocks the others
    behind it hold, their loads done, never come free (vLLM 0.33 waits on it for ever too: its
    pool is not too small for the head alone, the holders' blocks are)."""
    ctx = loop.ctx
    queue = loop.sched.kv_holding
    head = queue.peek()
    tr = ctx.records[head.request_id].tr
    held = loop.num_usable - ctx.kvm.block_pool.get_num_free_blocks()
    others = [repr(r.request_id) for r in queue if r is not head]
    names = ", ".join(["it", *others[:3]]) + (", ..." if len(others) > 3 else "")
    who = (f"the {len(queue)} requests held for their CPU loads ({names}) hold" if others
           else "the request held for its CPU load holds")
    why = ("the scan stops at it, the pool has too few left for it, and the others never run "
           "to free theirs" if others else "the pool has too few left for it")
    return InputError(f"request {tr.id!r} can never be admitted (stalled for {steps} steps with "
                      f"nothing running: vLLM would wait forever): {who} {held:,} of the "
                      f"{loop.num_usable:,} usable blocks; {why}; give more num_blocks",
                      path=ctx.trace.label, line=tr.line, field="num_blocks")
