"""Whether the simulated engine kept up with the trace: the queueing delays into the summary, a
warning when they come from the default (uncalibrated) clock, and one when the engine fell
behind the trace (engine mode, arrivals by timestamp)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.engine.latency import percentile

if TYPE_CHECKING:
    from kvcore.engine.context import ReplayContext

# The engine "fell behind" the trace when the median request waits this long between its
# arrival and its first scheduled step: many steps' worth at any realistic step time, so the
# waiting queue grows and the hit rates are those of an overloaded server.
BEHIND_MEDIAN_DELAY_S = 1.0


def check_load(ctx: ReplayContext) -> None:
    """Queueing delays into the summary; a warning when they come from the default (uncalibrated)
    clock, and one when the engine fell behind the trace."""
    ctx.book.settle()
    delays = sorted(ctx.book.delays)
    if not delays:
        return
    s = ctx.summary

    def pct(q: float) -> float:
        return round(percentile(delays, q) / 1000.0, 6)

    s.queue_delay_p50_s, s.queue_delay_p99_s = pct(0.5), pct(0.99)
    clock = ctx.cost.uncalibrated_warning()
    if clock:
        ctx.warning(clock)      # at the end, with the numbers it qualifies (an error stays one line)
    if s.queue_delay_p50_s < BEHIND_MEDIAN_DELAY_S:
        return
    span_s = (ctx.trace.last_arrival_ms - ctx.trace.first_arrival_ms) / 1000.0
    ctx.warning(f"the simulated engine fell behind the trace: it needed {ctx.t_ms / 1000.0:,.0f} s "
                f"of simulated time for a trace spanning {span_s:,.0f} s; queueing delay to the "
                f"first scheduled step median {s.queue_delay_p50_s:,.1f} s, p99 "
                f"{s.queue_delay_p99_s:,.1f} s. The hit rate is that of an overloaded server "
                "(more KV memory, a faster clock or fewer requests would change it)")

