"""The `fixed:MS` clock: every step takes the same time (a baseline that sees no work)."""

from __future__ import annotations

from dataclasses import dataclass

from kvcore.clock.batch import StepBatch


@dataclass(frozen=True, slots=True)
class FixedClock:
    ms: float
    name = "fixed"
    per_request = False
    needs_each = False
    uncalibrated = False        # a number the user chose, not kvcli's guess

    def step_counts(self, prefill_tokens: int, decode_seqs: int) -> float:
        return self.ms

    def step_ms(self, batch: StepBatch) -> float:
        return self.ms

    def decode_ms(self, n: int, context_sum: int) -> float:
        return self.ms

    def describe(self) -> dict:
        return {"name": "fixed", "step_ms": self.ms, "source": "given by the user"}

    def uncalibrated_warning(self) -> str | None:
        return None
