"""A replay whose running requests stop making progress is stopped with the state it was in,
not left to loop until killed.

The stall guard (`kvcore.engine.stall`) handles steps that schedule nothing. A step that
schedules work and gets nowhere (each computed token taken back, say a rollback that rolls too
far) is a kvcore bug, or a loop vLLM itself would spin in: either way no answer comes. Every
`TOKEN_STEPS` steps the engine loop asks `ProgressWatch.check`: progress is a request finished
or rejected, or the running requests' computed tokens above their most since the last one (a
preempted request's recompute climbs back first). After `NO_PROGRESS_STEPS` steps with requests
running or waiting and neither, `NoProgress` ends the run: one line on stderr and exit code 1
(`kvcli.output_failures.run`), with the step and the running requests' state in its message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvcore.engine.engine_loop import EngineLoop

# Steps without progress before the run is stopped: a decode gains a token a step, and a
# preempted request climbs back to its most at the token budget a step (a 1M-token context in
# ~500 steps at 2,048), so healthy runs gain within far fewer; at ~10 us a step a hang is
# stopped in ~10 s (the spec fixtures with a rollback removed: caught after 20,480 steps).
NO_PROGRESS_STEPS = 1_000_000


class NoProgress(RuntimeError):
    """The replay's running requests gained nothing for `NO_PROGRESS_STEPS` steps."""


class ProgressWatch:
    """One run's progress, checked now and then (`check`)."""

    __slots__ = ("best", "done", "loop", "since")

    def __init__(self, loop: EngineLoop) -> None:
        self.loop = loop
        self.done = -1          # requests finished or rejected at the last progress
        self.best = 0           # the running requests' most computed tokens since then
        self.since = loop.ctx.step

    def check(self) -> None:
        """Raise `NoProgress` after `NO_PROGRESS_STEPS` steps with requests running and no
        progress."""
        ctx = self.loop.ctx
        sched = self.loop.sched
        running = sched.running
        done = ctx.summary.finished + ctx.summary.rejected
        # (an idle engine owes no progress; one whose requests are waiting keeps counting:
        # requests admitted and preempted in turn leave no one running between, a loop vLLM
        # spins in too, which every check may land on: tests/data/sched_spec_pp_mamba's
        # ppu359, tests/data/sched_wide's wemaseed1763, every check at 0 running)
        computed = sum(r.num_computed_tokens for r in running)
        if done != self.done or computed > self.best or not (running or sched.has_requests()):
            self.done, self.best, self.since = done, computed, ctx.step
            return
        if ctx.step - self.since >= NO_PROGRESS_STEPS:
            state = ", ".join(f"{r.request_id}: {r.num_computed_tokens:,} of "
                              f"{r.num_tokens:,} tokens computed" for r in list(running)[:4])
            who = (f"{len(running)} request(s) running ({state})" if running else
                   f"none running and {len(sched.waiting):,} waiting at this step")
            raise NoProgress(
                f"no progress in {ctx.step - self.since:,} steps (steps {self.since:,} to "
                f"{ctx.step:,}): {who}, none finished "
                "and none computed a token beyond its most: a kvcli bug, or a loop vLLM "
                "would spin in too; please report it with the trace and the options")
