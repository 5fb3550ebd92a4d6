"""`LookupDelays`: vLLM's `kv_offload_lookup_async_delay_seconds` on the simulated clock.

vLLM observes, per request, the time from the first offload lookup that said "not yet" to the
next lookup that answered (or to the request's finish), in `time.monotonic()` seconds
(`offloading/scheduler.py`, `_maybe_observe_lookup_async_delay`). Both lookups happen inside
`schedule()`, which a replay places at its step's start, so the delay here is the simulated
time between the two steps' starts: modelled, not measured. vLLM's other end, a finish with a
deferral open, never happens in a replay: a deferred request waits, and no request is aborted.
"""

from __future__ import annotations

from typing import Any


class LookupDelays:
    __slots__ = ("opened", "pending")

    def __init__(self) -> None:
        self.opened: dict[str, float] = {}      # request -> the step start of its first deferral
        # delays (s) not yet taken; None until a reader asks for them (`collect`), so a replay
        # without metrics keeps none
        self.pending: list[float] | None = None

    def collect(self) -> None:
        """Keep the delays from now on (the metrics' `take` drains them)."""
        if self.pending is None:
            self.pending = []

    def note(self, rec: Any, t_ms: float) -> None:
        """The step starting at ``t_ms`` opened and closed these (the connector's record)."""
        for rid in rec.delays_opened:
            self.opened[rid] = t_ms
        for rid in rec.delays_closed:
            start = self.opened.pop(rid)
            if self.pending is not None:
                self.pending.append((t_ms - start) / 1000.0)

    def take(self) -> list[float]:
        """The delays closed since the last call, in seconds."""
        out = self.pending or []
        if out:
            self.pending = []
        return out
