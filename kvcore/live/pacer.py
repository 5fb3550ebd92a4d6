"""`Pacer`: a replay on the wall clock (`--realtime SPEED`): a step that ends at simulated time
``t`` is let out at ``t / SPEED`` seconds of wall time after the replay started, so subscribers
and scrapers see batches and metrics when vLLM would produce them (SPEED times faster)."""

from __future__ import annotations

import time
from collections.abc import Callable

# A wait longer than this is said before it starts: two arrivals 10^12 ms apart at --realtime
# 1000 waited 11.6 days with nothing on stderr, like a hang.
SAY_WAIT_S = 60.0


class Pacer:
    def __init__(self, speed: float, idle: Callable[[float], None] | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        """`idle(seconds)` is called instead of sleeping (it may return early: the publishers
        answer replay requests while they wait); `say(line)` tells of a long wait (stderr)."""
        self.speed = speed
        self.idle = idle or time.sleep
        self.say = say or (lambda line: None)
        self.t0: float | None = None
        self.max_behind_s = 0.0     # how far the replay fell behind the wall clock

    def start(self) -> None:
        if self.t0 is None:
            self.t0 = time.monotonic()

    def pause(self, seconds: float) -> None:
        """Wall time spent on something else (a wait for a subscriber): the pace moves on by
        that much, not counted as falling behind."""
        if self.t0 is not None:
            self.t0 += seconds

    def wait_until(self, t_ms: float) -> None:
        """Return when the wall clock reaches simulated time `t_ms` at this speed."""
        self.start()
        assert self.t0 is not None
        target = self.t0 + t_ms / 1000.0 / self.speed
        if (wait := target - time.monotonic()) > SAY_WAIT_S:
            self.say(f"realtime {self.speed:g}: the next step, at simulated {t_ms / 1000:,.3f} s, "
                     f"is {_span(wait)} of wall time away (an idle stretch of the trace; "
                     "Ctrl-C stops)")
        while True:
            left = target - time.monotonic()
            if left <= 0:
                self.max_behind_s = max(self.max_behind_s, -left)
                return
            self.idle(min(left, 0.05))


def _span(seconds: float) -> str:
    """A wall-clock wait for a person: ``95 s``, ``12.5 min``, ``3.2 h``, ``11.6 days``."""
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= 2 * size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:,.0f} s"
