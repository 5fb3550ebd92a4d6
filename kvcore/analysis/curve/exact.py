"""Exact per-capacity points, run in parallel processes (`kvcli curve --jobs`).

Two kinds of task:

* ``replay``: LRU under ``--rule vllm`` is the real cache-mode replay (`kvcore.engine.replay`,
  mode cache: the KVCacheManager, one request at a time: look up, allocate the whole prompt,
  free) with ``num_blocks = capacity + 1`` (block 0 is the null block);
* ``simulation``: any policy under either rule through `curve.sim.simulate`.

The inputs are handed to each worker once (the pool initializer), tasks carry only
``(kind, policy, capacity)``. Progress is counted in requests (every task replays every request
of the trace): in this process each run reports as it goes; workers add to one shared counter
that the parent reads while it waits for their points (every `POLL_S`), so the bar moves within
a long point and Ctrl-C is seen within a second.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import NamedTuple

from kvcore.analysis.curve.input import CurveInput
from kvcore.analysis.curve.sim import simulate


class Task(NamedTuple):
    kind: str          # "replay" | "simulation"
    policy: str
    capacity: int


class ExactPoint(NamedTuple):
    task: Task
    hit_tokens: int
    prompt_tokens: int
    rejected: int


_STATE: dict = {}
POLL_S = 0.2        # how often the parent reads the workers' counter


def _init(inp: CurveInput, trace, warmup: float, tick: Callable[[int], None]) -> None:
    _STATE.update(inp=inp, trace=trace, warmup=warmup, tick=tick)


def _replay(capacity: int) -> tuple[int, int, int]:
    """The KVCacheManager cache-mode replay at `capacity` usable blocks."""
    from kvcore.engine.replay import ReplayOptions, replay

    inp: CurveInput = _STATE["inp"]
    tick = _STATE["tick"]
    if int(inp.num_blocks.min()) > capacity:
        # No request fits: the replay refuses such a run; the answer is known.
        tick(inp.num_requests)
        return 0, 0, inp.num_requests
    trace = _STATE["trace"]
    opts = ReplayOptions(mode="cache", block_size=inp.block_size, num_blocks=capacity + 1,
                         warmup=_STATE["warmup"])
    s = replay(trace.path, opts, trace=trace, progress=tick)
    return s.hit_tokens, s.prompt_tokens, s.rejected


def run_task(task: Task) -> ExactPoint:
    if task.kind == "replay":
        hit, total, rejected = _replay(task.capacity)
        return ExactPoint(task, hit, total, rejected)
    r = simulate(_STATE["inp"], task.policy, task.capacity, _STATE["tick"])
    return ExactPoint(task, r.hit_tokens, r.prompt_tokens, r.rejected)


def run_tasks(tasks: list[Task], inp: CurveInput, trace, warmup: float, jobs: int,
              advance: Callable[[int], None] = lambda n: None) -> list[ExactPoint]:
    """Run every task, `jobs` processes at a time (in this process when jobs <= 1);
    ``advance(n)`` is told of requests done, ``len(tasks) * inp.num_requests`` in all."""
    if not tasks:
        return []
    # Longest first: replays and large capacities take longest; keeps the pool busy to the end.
    order = sorted(tasks, key=lambda t: (t.kind != "replay", -t.capacity))
    if jobs <= 1 or len(tasks) == 1:
        _init(inp, trace, warmup, advance)
        return [run_task(t) for t in order]
    # Imported here: multiprocessing costs start-up time that the one pass alone does not need.
    import multiprocessing

    from kvcore.host_memory import check_workers

    check_workers(min(jobs, len(tasks)))

    from kvcore.worker_start import starting_workers

    with starting_workers(min(jobs, len(tasks))):   # (a pool that fails ends what it started)
        done = multiprocessing.Value("q", 0)
        pool = multiprocessing.Pool(min(jobs, len(tasks)), _init_worker,
                                    (inp, trace, warmup, done))
    try:
        out: list[ExactPoint] = []
        seen = 0
        points = pool.imap_unordered(_run_and_flush, order)    # the caller sorts the points
        while len(out) < len(order):
            try:
                out.append(points.next(timeout=POLL_S))
            except multiprocessing.TimeoutError:
                pass
            now = done.value
            if now > seen:
                advance(now - seen)
                seen = now
    except BaseException:
        # Ctrl-C (or SIGTERM): stop the workers now instead of waiting for their points.
        pool.terminate()
        pool.join()
        raise
    pool.close()
    pool.join()
    return out


class _SharedTicks:
    """A worker's progress: requests added to the parent's counter, 256 at a time (a lock per
    request would cost more than the counting is worth)."""

    def __init__(self, done) -> None:
        self.done, self.pending = done, 0

    def __call__(self, n: int = 1) -> None:
        self.pending += n
        if self.pending >= 256:
            self.flush()

    def flush(self) -> None:
        with self.done.get_lock():
            self.done.value += self.pending
        self.pending = 0


def _run_and_flush(task: Task) -> ExactPoint:
    point = run_task(task)
    _STATE["tick"].flush()
    return point


def _init_worker(inp: CurveInput, trace, warmup: float, done) -> None:
    """A worker leaves Ctrl-C to the parent (which terminates it) and dies quietly then."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    _init(inp, trace, warmup, _SharedTicks(done))
