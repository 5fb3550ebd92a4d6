"""Exact decode fast-forward for the synchronous engine loop.

A stretch of steps in which nothing can change the schedule is run at the cost of its block
boundaries and finishes instead of every running request every step. A stretch starts where:

* every running request is decoding (its next token known: ``num_tokens == computed + 1``), and
  the token budget covers them all, so each is scheduled exactly 1 token a step, in running order;
* one full-attention group (the manager's short path) with its prefix cache up to date, and the
  free blocks cover every new block the stretch needs (no allocation fails, nobody is preempted);
* no admission can happen: nothing waits (then requests may finish inside the stretch: a finish
  only drops its request from the next steps); or every seat is taken (``max_num_seqs``: the
  waiting loop stops before it looks anything up); or the waiting head was refused in the last
  step with the budget the stretch leaves it, and stays refused: the free blocks only shrink and
  its hit can only grow if the block after its hit gets cached (the stretch stops before a step
  that would cache it); its refused attempt is repeated each step for the event stream. With a
  waiting request the stretch ends before the first finish (which frees a seat and blocks);
* nothing arrives before the stretch ends.

Then each step schedules the same requests, and a request does something the pool sees only
when its position ``c + j`` opens a block (it allocates one), closes one (it caches it) or it
finishes (it is freed). The stretch calls `allocate_slots` for exactly those (step, request)
pairs, in (step, running order) as the plain steps do, with the request's computed and sampled
tokens (the fake model's, a function of the position) brought to that step; every other call of
those steps is a no-op of the short path. Step lines, both event streams, the records, the clock
and the usage integral come out per step as the plain steps write them (`tests/test_fast_forward.py`
compares the bytes). Gain: see `benchmarks/sched_vs_vllm.py` and docs/replay-speed.md.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import orjson

from kvcore.engine.decode_windows import pending
from kvcore.engine.scheduler_release import free_finished
from kvcore.request import RequestStatus
from kvcore.specs import cdiv

if TYPE_CHECKING:
    from kvcore.engine.engine_loop import EngineLoop
    from kvcore.request import Request

MIN_STRETCH = 4          # shorter stretches run as plain steps (the set-up would not pay)
# The longest stretch while someone is told the output tokens (a bar): ~1 us a step for one
# request, so it moves every ~0.1 s; one stretch of a 10,000,000-token request stood for 10 s.
# (Exact either way: a stretch may always be cut short.)
STRETCH_TOLD = 1 << 16


def decode_stretch(loop: EngineLoop) -> int:
    """How many steps from now can be fast-forwarded exactly (0: run a plain step)."""
    ctx, sched = loop.ctx, loop.sched
    running, cfg, kvm = sched.running, ctx.cfg, ctx.kvm
    if cfg.async_scheduling or not running or len(running) > cfg.max_num_batched_tokens:
        return 0
    # Cheap bounds first: this runs before every step, and most steps of a busy trace have an
    # arrival or a prefill close by.
    if _until_arrival(loop, MIN_STRETCH, None) < MIN_STRETCH:
        return 0
    last = running[-1]                  # newly admitted requests (still prefilling) are last
    # (A decode window keeps `num_tokens == computed + 1`: this holds with or without catch-up.)
    if last.num_tokens != last.num_computed_tokens + 1:
        return 0
    managers = kvm.coordinator.single_type_managers
    if not kvm.all_groups_plain or len(managers) != 1:
        return 0
    m = managers[0]
    bs = m.block_size
    loop.ff_head = None
    waiting = len(sched.waiting) > 0
    if waiting and len(running) < sched.max_num_active:
        blocked = sched.blocked
        if (blocked is None or blocked[0] is not sched.waiting.peek()
                or blocked[2] != cfg.max_num_batched_tokens - len(running)):
            return 0
        head = blocked[0]
        after = kvm.get_computed_blocks(head)[1] // bs      # a pure lookup: its hit now
        loop.ff_head = (head, blocked[1],
                        head.block_hashes[after] if after < len(head.block_hashes) else None)
    max_len = sched.config.max_model_len
    now = sched.num_schedules
    finish = []           # the stretch step whose update appends each request's last token
    starts = []
    for r in running:
        p = pending(r, now)     # its decode window's steps so far (caught up if this stretches)
        c = r.num_computed_tokens + p
        table = m.req_to_blocks.get(r.request_id)
        if (r.num_tokens + p != c + 1 or c < r.num_prompt_tokens or table is None
                or len(table) != cdiv(c, bs)
                or (kvm.enable_caching and m.num_cached_block.get(r.request_id, 0) != c // bs)):
            return 0
        f = min(r.max_tokens - r.num_output_tokens - p - 1,  # type: ignore[operator]
                max_len - c - 2)
        if waiting and f < MIN_STRETCH:
            return 0        # with a request waiting the stretch ends before this finish
        starts.append(c)
        finish.append(f)
    k = min(finish) if waiting else max(finish) + 1
    if cfg.max_steps is not None:
        k = min(k, cfg.max_steps - ctx.step)
    if ctx.output_progress is not None:     # (told between stretches: `token_progress`)
        k = min(k, STRETCH_TOLD)
    k = min(k, _until_arrival(loop, k, finish, starts))
    free = kvm.block_pool.free_block_queue.num_free_blocks
    if _need(starts, finish, k, bs) > free:
        lo, hi = 0, k                  # the longest stretch whose new blocks fit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if _need(starts, finish, mid, bs) <= free else (lo, mid - 1)
        k = lo
    if k < MIN_STRETCH:
        return 0
    sched.catch_up_all()
    loop.ff_finish = finish
    return k


def _need(starts: list[int], finish: list[int], k: int, bs: int) -> int:
    """New blocks the first ``k`` steps take: positions that open a block (frees ignored)."""
    total = 0
    for c, f in zip(starts, finish):
        n = min(k, f + 1)
        if n > 0:
            total += (c + n - 1) // bs - (c - 1) // bs
    return total


def _until_arrival(loop: EngineLoop, k: int, finish: list[int] | None,
                   starts: list[int] | None = None) -> int:
    """Steps before the next arrival would be added (at the start of a step after this one);
    without ``finish`` every running request is taken to run the whole ``k`` steps, at context
    0 (a lower bound on the step time: this cheap check only rules stretches out, the exact
    one with ``finish`` and the requests' ``starts`` follows)."""
    pending = loop.pending
    horizon = loop.horizon_ms           # (a cluster's next arrival anywhere: inf alone)
    if not pending and horizon == math.inf:
        return k
    ctx = loop.ctx
    mode = ctx.cfg.arrivals
    if mode == "step":
        return pending[0].arrival_step - ctx.step if pending else k
    if mode != "timestamp":
        return 0
    t, nxt = ctx.t_ms, min(pending[0].arrival_ms, horizon) if pending else horizon
    n = len(loop.sched.running)
    cost = ctx.cost
    for j in range(1, k):          # the clock adds each step's cost, as the plain steps do
        if finish is None:
            t += cost.decode_ms(n, 0)
        else:                       # step j - 1: the requests still running, contexts after it
            live = [i for i, f in enumerate(finish) if f >= j - 1]
            t += cost.decode_ms(len(live), sum(starts[i] for i in live) + len(live) * j
                                if starts is not None and cost.per_request else 0)
        if nxt <= t:
            return j
    return k


def run_stretch(loop: EngineLoop, k: int) -> int:
    """Run the next ``k`` steps (a `decode_stretch`) with the plain steps' every effect; fewer
    when a step would cache the block a refused waiting head needs next. Return the steps run."""
    ctx, sched = loop.ctx, loop.sched
    kvm = ctx.kvm
    pool = kvm.block_pool
    bs = kvm.coordinator.single_type_managers[0].block_size
    running = list(sched.running)
    start = [r.num_computed_tokens for r in running]
    finish = loop.ff_finish
    found: set[tuple[int, int]] = set()   # (step, running index): a position opening/closing
    for i, c in enumerate(start):
        end = min(k, finish[i] + 1)
        for first in ((-c) % bs, (-(c + 1)) % bs):
            found.update((j, i) for j in range(first, end, bs))
    calls = sorted(found)
    ends: dict[int, list[int]] = {}
    for i, f in enumerate(finish):
        if f < k:
            ends.setdefault(f, []).append(i)          # in running order
    jsonl, vllm, steps_out = ctx.jsonl, ctx.vllm, ctx.steps_out
    tracer, obs, head = sched.tracer, sched.observer, loop.ff_head
    active = list(range(len(running)))
    start_sum = sum(start)          # of the active requests: the clock's contexts
    scheduled = _scheduled_bytes(running, active)
    at = 0
    done = k
    for j in range(k):
        if head is not None and head[2] is not None and _caches(loop, running, start, calls,
                                                                 at, j, head[2], bs):
            done = j        # this step could admit the head: it runs plainly
            break
        if jsonl is not None:
            jsonl.step, jsonl.t_ms = ctx.step, ctx.t_ms
        while at < len(calls) and calls[at][0] == j:
            i = calls[at][1]
            r = running[i]
            r.num_computed_tokens = start[i] + j
            _sample_up_to(loop, r, start[i] + j + 1)
            if tracer is not None:
                tracer.req = r.request_id
            if kvm.allocate_slots(r, 1) is None:     # decode_stretch counted the blocks
                raise RuntimeError("a fast-forward allocation failed")
            at += 1
        if head is not None and head[1]:      # its refused attempt, as the plain step makes it
            if tracer is not None:
                tracer.req = head[0].request_id
            if obs is not None:
                obs.on_admit_attempt(head[0])
                obs.on_admit_failed(head[0])
        dt = ctx.cost.decode_ms(len(active), start_sum + len(active) * (j + 1))
        loop.usage_time += (loop.num_usable - pool.get_num_free_blocks()) * dt
        t_end = ctx.t_ms + dt
        finished = _finish(loop, running, start, ends.get(j, ()), j, t_end)
        sched.finished_req_ids = set(finished)    # the next schedule() clears them
        if vllm is not None:
            vllm.batch(t_end / 1000.0, kvm.take_events())
        if steps_out is not None:
            steps_out.write(b'{"step":' + orjson.dumps(ctx.step) + b',"t_ms":'
                            + orjson.dumps(round(t_end, 6)) + scheduled
                            + b',"admitted":{},"preempted":[],"finished":'
                            + orjson.dumps(finished) + b',"num_free_blocks":'
                            + orjson.dumps(pool.get_num_free_blocks()) + b"}\n")
        if finished:
            gone = set(ends[j])
            active = [i for i in active if i not in gone]
            start_sum -= sum(start[i] for i in gone)
            sched.running = [running[i] for i in active]
            scheduled = _scheduled_bytes(running, active)
        ctx.t_ms = t_end
        ctx.step += 1
    for i in active:
        r = running[i]
        r.num_computed_tokens = start[i] + done
        _sample_up_to(loop, r, start[i] + done + 1)
    if done:
        loop.idle_run = 0
    return done


def _scheduled_bytes(running: list, active: list[int]) -> bytes:
    return b',"scheduled":' + orjson.dumps({running[i].request_id: 1 for i in active})


def _finish(loop: EngineLoop, running: list, start: list[int], ending, j: int,
            t_end: float) -> list[str]:
    """The update of step ``j`` for the requests whose last token it appends: the token, the
    finish and the free (`scheduler_release.free_finished`), their records (`EngineLoop.account`)."""
    ctx, sched = loop.ctx, loop.sched
    if ctx.jsonl is not None and ending:
        ctx.jsonl.t_ms = t_end
    finished = []
    for i in ending:
        r = running[i]
        r.num_computed_tokens = start[i] + j + 1
        _sample_up_to(loop, r, start[i] + j + 2)
        r.status = RequestStatus.FINISHED_LENGTH_CAPPED
        finished.append(r.request_id)
        free_finished(sched, r)
    if finished:
        loop.account([], finished, t_end)
    return finished


def _caches(loop: EngineLoop, running: list, start: list[int], calls: list, at: int, j: int,
            wanted: bytes, bs: int) -> bool:
    """Whether step ``j``'s calls cache a block with hash ``wanted`` (their requests' tokens
    brought to the step's start, as the plain steps have them then)."""
    while at < len(calls) and calls[at][0] == j:
        i = calls[at][1]
        r = running[i]
        c = start[i] + j
        if (c + 1) % bs == 0:
            _sample_up_to(loop, r, c + 1)
            if r.block_hashes[(c + 1) // bs - 1] == wanted:
                return True
        at += 1
    return False


def _sample_up_to(loop: EngineLoop, r: Request, num_tokens: int) -> None:
    """Append the fake model's tokens until the request holds ``num_tokens`` (one hashing call
    for them all: the same hashes as one token at a time)."""
    if r.num_tokens >= num_tokens:
        return
    r.append_output_token_ids(loop.sample_run(r, num_tokens - r.num_tokens))
