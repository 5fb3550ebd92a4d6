"""A replay's progress in output tokens (`replay(..., output_progress=...)`), for a progress
bar that moves while a long request decodes: a trace of one request of 10,000,000 output tokens
decodes for ~55 s, and a bar of requests stood at 0/1 all that time.

The engine loop tells `ctx.output_progress` the output tokens so far when it is made (0, before
the start-up warnings), every `TOKEN_STEPS` steps and after its last step: those of the requests finished or rejected, each
counted at its whole output length (so that the count ends at the trace's total even when
max_model_len stops a request short, or it never ran), plus those the running requests have
sampled (a decode window's steps included). Under async scheduling the token in flight is not
counted yet; a preempted request's tokens leave the count until it runs again (a bar keeps its
highest). Cache mode decodes nothing and tells nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.engine.decode_windows import pending

if TYPE_CHECKING:
    from kvcore.engine.engine_loop import EngineLoop

# A count costs a pass over the running requests (at most max_num_seqs) and the bar's update:
# every 1,024 steps that is ~0.1% of the steps' own time (a decode step alone is ~5 us), and a
# bar still moves several times a second.
TOKEN_STEPS = 1024


def tell_output_tokens(loop: EngineLoop) -> int:
    """Tell `output_progress` the output tokens so far, if it is set; the step to tell next."""
    ctx = loop.ctx
    tell = ctx.output_progress
    if tell is not None:
        sched = loop.sched
        now = sched.num_schedules
        tell(ctx.output_done + sum(r.num_output_tokens + pending(r, now) for r in sched.running))
    return ctx.step + TOKEN_STEPS
