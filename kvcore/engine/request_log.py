"""The per-request record of a replay and its JSON lines (`kvcli replay --requests`)."""

from __future__ import annotations

from dataclasses import dataclass

from kvcore.engine.latency import request_latency
from kvcore.traces import TraceRequest


@dataclass(slots=True)
class RequestRecord:
    """One request's bookkeeping: its hit at first admission, preemptions, and its times."""

    tr: TraceRequest
    pos: int                        # position in arrival order (the warm-up cut)
    arrival_ms: float = 0.0
    hit_tokens: int | None = None   # at first admission
    preemptions: int = 0
    first_scheduled_step: int | None = None
    first_scheduled_ms: float | None = None     # the start of that step (not in the line)
    first_token_ms: float | None = None
    finish_step: int | None = None
    finish_ms: float | None = None
    rejected: str | None = None
    extra: dict | None = None       # more keys for the line (the CPU tier's hits)
    # Where its latency counts from: its trace timestamp (arrivals by timestamp) or 0 (all at
    # once); None where latency does not apply (`kvcore.engine.latency.applies`).
    latency_from_ms: float | None = None
    generated: int | None = None    # output tokens at its finish (TPOT's divisor)
    output_base: int = -2           # `kvcore.engine.fake_model`'s, read on first use

    def latency(self, now: float | None = None) -> dict[str, float | None]:
        """Its TTFT, TPOT, E2E and queueing time (`kvcore.engine.latency`). ``now``: the time
        of the finish being recorded (a `finish` event is written before `finish_ms` is set;
        a first token not recorded yet came with it)."""
        finish = self.finish_ms if now is None else now
        first = self.first_token_ms if self.first_token_ms is not None else now
        return request_latency(self.latency_from_ms, self.first_scheduled_ms, first, finish,
                               self.generated)

    def line(self) -> dict:
        tr = self.tr
        out = {"id": tr.id, "arrival": round(self.arrival_ms, 6), "arrival_step": tr.arrival_step,
                "prompt_tokens": tr.prompt_len, "output_tokens": tr.output_len,
                # what it produced (max_model_len may stop it short of output_tokens; TPOT's
                # divisor): summing output_tokens gave 33,967 against vLLM's metric's 31,564
                "generated_tokens": self.generated, "hit_tokens": self.hit_tokens,
                "preemptions": self.preemptions,
                "first_scheduled_step": self.first_scheduled_step,
                "finish_step": self.finish_step,
                "first_token_ms": None if self.first_token_ms is None
                else round(self.first_token_ms, 6),
                "finish_ms": None if self.finish_ms is None else round(self.finish_ms, 6),
                "rejected": self.rejected}
        out.update(self.latency())
        if self.extra is not None:
            out.update(self.extra)
        return out
