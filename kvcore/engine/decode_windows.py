"""Decode windows: the steps in which a decoding request's schedule is a foregone conclusion.

In an FCFS step a running request whose next token is known (``num_tokens ==
num_computed_tokens + 1``) is given exactly one token when the budget reaches it. With one
full-attention group on the manager's short path (`kvcore.plain_step`) that step then allocates
nothing unless position ``c + 1`` opens a block, caches nothing unless it closes one, and the
update appends one token (hashing the block it may complete) and finishes nothing unless it is
the last. So up to the request's next block edge and its finish, each step's whole effect on it
is one entry ``id: 1`` in the step's scheduled tokens (in running order), one token of budget,
one decoding sequence on the clock, and one more computed and sampled token.

The scheduler records such steps as a window ``[decode_window_start, decode_window_end]`` (its
`schedule()` call numbers) instead of running them: a step inside the window costs the request
a dictionary entry, not an `allocate_slots` call, an update and a sample. The window's tokens are
brought in at once (`catch_up`) before anything looks at the request: its next eager step, a
preemption, a step whose budget runs out before it, the fast-forward, the end of the run. The
catch-up appends the same tokens and computes the same block hashes as the steps would have, so
step lines, both event streams, the stats and the clock come out byte for byte
(`tests/test_decode_windows.py` compares them with windows on and off, sync and async).
Under async scheduling the same holds one step shifted (see `DecodeWindows`).

Hybrid models (sliding-window and chunked local groups beside full attention, or alone) have
windows too: a window then also ends before the step at which a group frees a block that left
its window, so the pool sees every allocation, caching and free in the same order
(`kvcore.quiet_steps`; gpt-oss-20b: 14 of 16 decode steps in windows). Windows are off under
the PRIORITY policy, with Mamba groups, groups of several block sizes and while a call recorder
watches. Gain: docs/replay-speed.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kvcore.kv_cache_manager import KVCacheManager
from kvcore.quiet_steps import quiet_steps
from kvcore.request import Request, RequestStatus

if TYPE_CHECKING:
    from kvcore.engine.scheduler_io import SchedulerOutput

# A request outside any window: no start is after this end.
CLOSED = -1


def pending(req: Request, now: int) -> int:
    """The steps of the request's decode window before step ``now`` (not yet applied)."""
    end = req.decode_window_end
    if end >= now:
        end = now - 1
    n = end - req.decode_window_start + 1
    return max(0, n)


def restore_order(out: SchedulerOutput) -> None:
    """Put the requests catch-ups handed back to batch ``out`` (async) in schedule order: its
    update finishes requests and caches their blocks in that order."""
    pos = {rid: i for i, rid in enumerate(out.num_scheduled_tokens)}
    out.eager.sort(key=lambda r: pos[r.request_id])
    out.returned = False


class DecodeWindows:
    """The window rules for one scheduler over one manager; `sample_run(req, n)` gives the fake
    model's next ``n`` tokens of ``req`` (those a run of ``n`` decode steps would append).

    Under async scheduling (``async_scheduling``) a step schedules one token and processes the
    output of the batch scheduled one step before, so inside a window each step adds one
    computed token and one sampled token, and the placeholder and in-flight counters stay at 1.
    The last window batch is still in the queue when the window ends: the catch-up hands the
    request back to that batch (`SchedulerOutput.eager`) so that its output is processed as the
    plain steps process it."""

    __slots__ = ("agg_n", "agg_sum", "async_scheduling", "deferred", "ends", "kvm", "max_len",
                 "offer_failed", "one_plain", "sample_run")

    def __init__(self, kvm: KVCacheManager, max_model_len: int,
                 sample_run: Callable[[Request, int], list[int]],
                 async_scheduling: bool = False) -> None:
        self.kvm = kvm
        self.max_len = max_model_len
        self.sample_run = sample_run
        self.async_scheduling = async_scheduling
        # vLLM's deferred block frees (`deferred_frees`: async with the CPU tier), or None
        self.deferred: Any = None
        # the CPU tier's requests whose last store offer failed (they offer again every step)
        self.offer_failed: set[str] = set()
        # The clock's aggregate of the windows live at a schedule() call (`context_after`):
        # how many, and the sum of (computed tokens at the window's opening - its first call);
        # `ends` holds the same per window end, taken out when the call after it begins. O(1)
        # per window and per step, never per request per step.
        self.agg_n = 0
        self.agg_sum = 0
        self.ends: dict[int, list[int]] = {}
        # One full-attention-like group: its bounds inline (else `quiet_steps`, any groups).
        managers = kvm.coordinator.single_type_managers
        self.one_plain = len(managers) == 1 and managers[0].allocates_by_template

    def expire(self, now: int) -> None:
        """At the start of schedule() call ``now``: windows that ended at call ``now - 1`` are
        no longer in the aggregate."""
        gone = self.ends.pop(now - 1, None)
        if gone is not None:
            self.agg_n -= gone[0]
            self.agg_sum -= gone[1]

    def context_after(self, now: int) -> int:
        """The sum of the contexts after schedule() call ``now`` of the requests inside their
        windows at it (each window step adds one token to computed tokens frozen at opening)."""
        return self.agg_sum + self.agg_n * (now + 1)

    def usable(self) -> bool:
        """Whether `quiet_steps` can count the manager's decode steps (checked each step: a call
        recorder turns windows off)."""
        return self.kvm.windowable

    def open(self, req: Request, now: int) -> None:
        """After the update of a request's eager batch, with schedule() call ``now`` next: the
        schedules from ``now`` on that are plain for it (none when the next one opens or closes
        a block or can end it)."""
        if req.decode_window_start <= req.decode_window_end or \
                req.status != RequestStatus.RUNNING or req.request_id in self.offer_failed:
            return                          # (async: a window opened at the batch before)
        c = req.num_computed_tokens
        t = req.num_tokens
        if self.async_scheduling:
            # The steady state: the batch scheduled last holds its one token in flight.
            if (t != c or req.num_output_placeholders != 1 or req.num_in_flight_tokens != 1
                    or req.num_stale_output_tokens):
                return
        elif t != c + 1:
            return
        if c < req.num_prompt_tokens + self.async_scheduling:
            return                          # still prefilling (async: no token yet)
        kvm = self.kvm
        # Its blocks are cached up to where the schedule caches: the computed tokens (sync),
        # the known tokens less the one in flight (async).
        done = c - 1 if self.async_scheduling else c
        # The window ends before the schedule that needs a new block, that caches one (hybrid:
        # or frees one, in any group), that would schedule past the last token or the model
        # length.
        last = req.max_tokens - req.num_output_tokens - 1  # type: ignore[operator]
        if self.one_plain:
            m = kvm.coordinator.single_type_managers[0]
            bs = m.block_size
            table = m.req_to_blocks.get(req.request_id)
            if table is None:
                return
            if kvm.enable_caching and m.num_cached_block.get(req.request_id, 0) != done // bs:
                return
            edge = (-(done + 1)) % bs           # schedules before one caches a block
            k = min(len(table) * bs - c, edge, last, self.max_len - t - 1)
        else:
            k = min(quiet_steps(kvm.coordinator, kvm.enable_caching, req.request_id, c, done),
                    last, self.max_len - t - 1)
        if k > 0:
            req.decode_window_start = now
            end = req.decode_window_end = now + k - 1
            self.agg_n += 1
            self.agg_sum += c - now
            bucket = self.ends.get(end)
            if bucket is None:
                self.ends[end] = [1, c - now]
            else:
                bucket[0] += 1
                bucket[1] += c - now

    def catch_up(self, req: Request, now: int, last: SchedulerOutput | None) -> None:
        """Apply the window's steps before schedule() call ``now`` (all of them once it has
        ended) and close it. ``last``: the output of call ``now - 1`` (async: its batch, still
        queued, takes the request back)."""
        n = pending(req, now)
        end = req.decode_window_end
        if end >= now:          # closed early: out of the aggregate now, not at its end
            key = req.num_computed_tokens - req.decode_window_start
            self.agg_n -= 1
            self.agg_sum -= key
            bucket = self.ends[end]
            bucket[0] -= 1
            bucket[1] -= key
        req.decode_window_start, req.decode_window_end = 0, CLOSED
        if n <= 0:
            return
        req.num_computed_tokens += n
        if self.deferred is not None:
            self.deferred.window_closed(req)
        if not self.async_scheduling:
            req.append_output_token_ids(self.sample_run(req, n))
            return
        # n schedules and the outputs of n - 1 batches: one token and one placeholder in flight
        req.num_in_flight_tokens += 1
        req.num_output_placeholders += 1
        if n > 1:
            req.append_output_token_ids(self.sample_run(req, n - 1))
        assert last is not None
        last.eager.append(req)
        last.sampling.add(req.request_id)
        last.returned = True

    def catch_up_all(self, reqs: list[Request], now: int, last: SchedulerOutput | None) -> None:
        """`catch_up` every request of ``reqs`` inside a window."""
        for req in reqs:
            if req.decode_window_start <= req.decode_window_end:
                self.catch_up(req, now, last)
