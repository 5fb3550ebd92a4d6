"""The replay's model: the tokens a request samples, as `TraceRequest.output_token` says, fast.

Output position ``p`` of a request holds the trace's own token when the trace gives its outputs,
else the scheduler oracle's token ``base + p`` (`kvcore.traces.request`). The engine samples a
token per decoding request per step (a decode window's tokens at once), and calling the trace
request's interpreted method each time was ~7% of `benchmarks/sched_vs_vllm.py`'s instructions.
So a request's ``base`` is read once, through that method (its position 0), and kept on its
record; a request whose trace gives its outputs keeps going through the method. Same tokens.
"""

from __future__ import annotations

from kvcore.engine.request_log import RequestRecord

UNKNOWN = -2    # `RequestRecord.output_base`: not read yet
GIVEN = -1      # ... the trace gives the outputs: ask the trace request


def _base(rec: RequestRecord, max_model_len: int | None) -> int:
    base = rec.output_base
    if base == UNKNOWN:
        tr = rec.tr
        base = GIVEN if tr.output_token_ids is not None else tr.output_token(0, max_model_len)
        rec.output_base = base
    return base


def next_token(rec: RequestRecord, position: int, max_model_len: int | None) -> int:
    """The token at output ``position`` of ``rec``'s request."""
    base = _base(rec, max_model_len)
    if base == GIVEN:
        return rec.tr.output_token(position, max_model_len)
    return base + position


def next_tokens(rec: RequestRecord, first: int, n: int, max_model_len: int | None) -> list[int]:
    """The tokens at output positions ``first .. first + n - 1``."""
    base = _base(rec, max_model_len)
    if base == GIVEN:
        return rec.tr.output_tokens(first, n, max_model_len)
    return list(range(base + first, base + first + n))
