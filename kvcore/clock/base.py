"""The contract every clock keeps (`kvcore.clock.registry` builds them by name).

A clock says how long one engine step takes on the simulated clock, in milliseconds:

* `step_ms(batch)` for a `StepBatch` (requests with their new tokens and contexts, plus an
  aggregate of one-token decodes); `decode_ms(n, context_sum)` for a step of ``n`` one-token
  decodes whose contexts after the step sum to ``context_sum`` (the fast-forward's steps; it
  must equal `step_ms` of that batch; a clock that `needs_each` context answers one decode). Never negative, never NaN, and never smaller for a batch
  with more tokens or more context (`tests/test_roofline.py` checks the roofline's).
* `per_request`: False when two counts suffice (`step_counts(prefill_tokens, decode_seqs)`, the
  linear and fixed clocks): the engine loop then builds no batch, so today's clock costs what it
  did. `needs_each`: True when the step time needs each decode's own context (sliding-window or
  chunked layers clamp per request): the engine then keeps decode windows and the fast-forward
  off, which report decodes only as an aggregate.
* `describe()`: the clock's name, parameters and the source of its numbers, for JSON outputs.
  `uncalibrated`: whether its times are kvcli's default guess (the linear defaults: latencies
  are labelled "uncalibrated"); `uncalibrated_warning()`: a line to show beside times it
  produced, or None.
"""

from __future__ import annotations

from typing import Protocol

from kvcore.clock.batch import StepBatch


class Clock(Protocol):
    """A step's time on the simulated clock; the whole contract is the module docstring's."""

    name: str
    per_request: bool
    needs_each: bool

    @property
    def uncalibrated(self) -> bool: ...

    def step_counts(self, prefill_tokens: int, decode_seqs: int) -> float: ...

    def step_ms(self, batch: StepBatch) -> float: ...

    def decode_ms(self, n: int, context_sum: int) -> float: ...

    def describe(self) -> dict: ...

    def uncalibrated_warning(self) -> str | None: ...
