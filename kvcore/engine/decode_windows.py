"""Decode windows: the steps in which a decoding request's schedule is a foregone conclusion.

In a synchronous FCFS step a running request whose next token is known (``num_tokens ==
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
(`tests/test_decode_windows.py` compares them with windows on and off). Windows are off under
async scheduling, the PRIORITY policy, hybrid groups and while a call recorder watches (the
manager's short path is then off). Gain: docs/replay.md ("Speed").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvcore.request import Request, RequestStatus

# A request outside any window: no start is after this end.
CLOSED = -1


def pending(req: Request, now: int) -> int:
    """The steps of the request's decode window before step ``now`` (not yet applied)."""
    end = req.decode_window_end
    if end >= now:
        end = now - 1
    n = end - req.decode_window_start + 1
    return max(0, n)


class DecodeWindows:
    """The window rules for one scheduler over one manager; `sample_run(req, n)` gives the fake
    model's next ``n`` tokens of ``req`` (those a run of ``n`` decode steps would append)."""

    __slots__ = ("kvm", "max_len", "sample_run")

    def __init__(self, kvm: Any, max_model_len: int,
                 sample_run: Callable[[Request, int], list[int]]) -> None:
        self.kvm = kvm
        self.max_len = max_model_len
        self.sample_run = sample_run

    def usable(self) -> bool:
        """Whether the manager takes the short path for every decode step (checked each step: a
        call recorder turns the short path off)."""
        kvm = self.kvm
        managers = kvm.coordinator.single_type_managers
        return (kvm.all_groups_plain and len(managers) == 1 and kvm.cacheable_alignment == 1
                and kvm.hash_block_size == managers[0].block_size)

    def open(self, req: Request, now: int) -> None:
        """After the eager step ``now - 1`` of a running request: the steps from ``now`` on that
        are plain for it (none when its next step opens or closes a block or finishes it)."""
        c = req.num_computed_tokens
        t = req.num_tokens
        if t != c + 1 or c < req.num_prompt_tokens or req.status != RequestStatus.RUNNING:
            return
        kvm = self.kvm
        m = kvm.coordinator.single_type_managers[0]
        bs = m.block_size
        rid = req.request_id
        table = m.req_to_blocks.get(rid)
        if table is None:
            return
        if kvm.enable_caching and m.num_cached_block.get(rid, 0) != c // bs:
            return
        x = c + 1                                   # the position the next step computes
        # The window ends before the step that needs a new block, that closes (caches) one,
        # that appends the last token, or that the model length ends.
        last = req.max_tokens - req.num_output_tokens - 1  # type: ignore[operator]
        k = min(len(table) * bs - x + 1, (-x) % bs, last, self.max_len - t - 1)
        if k > 0:
            req.decode_window_start = now
            req.decode_window_end = now + k - 1

    def catch_up(self, req: Request, now: int) -> None:
        """Apply the window's steps before ``now`` (all of them once it has ended) and close it."""
        end = req.decode_window_end
        if end >= now:
            end = now - 1
        n = end - req.decode_window_start + 1
        req.decode_window_start, req.decode_window_end = 0, CLOSED
        if n > 0:
            req.num_computed_tokens += n
            req.append_output_token_ids(self.sample_run(req, n))
