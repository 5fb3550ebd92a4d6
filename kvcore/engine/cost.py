"""The simulated clock's cost model: how long one engine step takes.

    step_ms = step_overhead_ms + prefill_ms_per_token * (tokens of requests still prefilling)
                               + decode_ms_per_seq * (requests decoding one token)

A request is "decoding" in a step when exactly one token was scheduled for it and its prompt was
already computed; every other scheduled token counts as prefill. The defaults below (the only
place they are written: `ReplayOptions` takes its defaults from here) are a rough mid-size model
on one modern GPU; they only move arrivals relative to steps (what is concurrently resident),
never the cache rules. `uncalibrated` says whether a clock is that guess (the latencies are
labelled so): the defaults the user did not set. Numbers the user set (`--clock linear:C0,C1,C2`,
or any of the three step options given) are the user's choice, even when they are the defaults
spelt out: the clock remembers that it was set (`user_set`, decided when it is made).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvcore.clock.batch import StepBatch


@dataclass(frozen=True, slots=True)
class CostModel:
    """The `linear` clock (`kvcore.clock.base.Clock`): `--clock linear:C0,C1,C2`."""
    step_overhead_ms: float = 5.0
    prefill_ms_per_token: float = 0.05
    decode_ms_per_seq: float = 0.25
    user_set: bool = False          # the user gave these numbers (not kvcli's default guess)
    name = "linear"
    per_request = False
    needs_each = False

    def step_counts(self, prefill_tokens: int, decode_seqs: int) -> float:
        return (self.step_overhead_ms + self.prefill_ms_per_token * prefill_tokens
                + self.decode_ms_per_seq * decode_seqs)

    def step_ms(self, batch: StepBatch) -> float:
        return self.step_counts(batch.prefill_tokens, batch.decode_requests)

    def decode_ms(self, n: int, context_sum: int) -> float:
        return self.step_counts(0, n)

    def describe(self) -> dict:
        return {"name": "linear", "step_overhead_ms": self.step_overhead_ms,
                "prefill_ms_per_token": self.prefill_ms_per_token,
                "decode_ms_per_seq": self.decode_ms_per_seq,
                "source": ("kvcli's default guess, measured on no GPU" if self.uncalibrated
                           else "given by the user")}

    @property
    def uncalibrated(self) -> bool:
        """Whether its step times are kvcli's default guess, measured on no GPU (a clock the
        user set is not): the one answer behind the "uncalibrated" warning and the latency
        label of the summary, the request distributions and `kvcli stats`."""
        return not self.user_set and self == CostModel()

    def uncalibrated_warning(self) -> str | None:
        """What a user must be told beside numbers timed by this clock: the defaults are a
        guess, measured on no GPU (None for a clock the user set)."""
        if not self.uncalibrated:
            return None
        return (f"uncalibrated clock: simulated time and queueing delays come from the default "
                f"step-time model ({self.step_overhead_ms:g} ms a step + "
                f"{self.prefill_ms_per_token:g} ms a prefill token + {self.decode_ms_per_seq:g} "
                "ms a decoding request), measured on no GPU: they order arrivals and steps, they "
                "do not predict latency (options step_overhead_ms, prefill_ms_per_token and "
                "decode_ms_per_seq set it)")
