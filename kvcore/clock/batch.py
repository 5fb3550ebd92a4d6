"""`StepBatch`: what a clock is told about one engine step.

Per request scheduled in full (the engine loop's eager requests, a `clock explain` case): its new
tokens ``t``, its context after the step ``C`` (vLLM's perf.py `context_len`: the computed tokens
before the step plus ``t``) and whether vLLM would bill it as a prefill. Requests inside decode
windows and fast-forwarded stretches are not walked one by one (that would undo those speed-ups):
they come as an aggregate, ``agg_decodes`` one-token decodes whose contexts sum to
``agg_context``. A model with sliding-window or chunked layers needs each context (the clamp is
per request), so the engine keeps windows and the fast-forward off for it (`Clock.needs_each`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class StepBatch:
    # (new tokens, context after the step, billed as a prefill) per request
    requests: list[tuple[int, int, bool]] = field(default_factory=list)
    agg_decodes: int = 0        # one-token decodes not listed (decode windows, fast-forward)
    agg_context: int = 0        # the sum of their contexts after the step

    def add(self, num_tokens: int, context_len: int, is_prefill: bool, count: int = 1) -> None:
        for _ in range(count):
            self.requests.append((num_tokens, context_len, is_prefill))

    @property
    def num_tokens(self) -> int:
        return sum(t for t, _, _ in self.requests) + self.agg_decodes

    @property
    def num_requests(self) -> int:
        return len(self.requests) + self.agg_decodes

    @property
    def prefill_tokens(self) -> int:
        """Tokens of requests billed as prefills (the linear clock's first count)."""
        return sum(t for t, _, p in self.requests if p)

    @property
    def decode_requests(self) -> int:
        return sum(1 for _, _, p in self.requests if not p) + self.agg_decodes
