"""A curve's input from a trace file: the block keys (`input.py`), the block size it runs at,
and what the reading has to say about the trace (warnings, in the result's `warnings`)."""

from __future__ import annotations

from kvcore.analysis.curve.fastread import MOONCAKE_BLOCK, read_hash_id_trace
from kvcore.analysis.curve.input import CurveInput, build_input, chained_input, warmup_start
from kvcore.traces import out_of_order_warning


def read_input(trace_path: str, rule: str, warmup: float, block_size: int | None, trace=None
               ) -> tuple[CurveInput, int, list[str], object]:
    """(input, block size, warnings, the trace as read: None when the fast reader took it).
    ``block_size`` None: the trace's own (16 for a trace of prompt lengths only)."""
    if trace is None and block_size in (None, MOONCAKE_BLOCK):
        # A plain Mooncake file: arrays straight from the bytes, no per-request objects.
        arrays = read_hash_id_trace(trace_path)
        if arrays is not None:
            bs = arrays.trace_block_size
            inp = chained_input(arrays.ids, arrays.lens, arrays.num_tokens, rule, bs)
            if inp is not None:
                inp.first_counted = warmup_start(inp.num_requests, warmup)
                return inp, bs, _late(arrays.out_of_order), trace
    if trace is None:
        from kvcore.traces import read_trace

        trace = read_trace(trace_path)
    from kvcore.traces.formats import CONTENTLESS_FORMATS

    contentless = trace.format in CONTENTLESS_FORMATS
    bs = block_size
    if bs is None:
        # (a lengths-only trace's ids are made up, of UNIQUE_BLOCK tokens: not its size)
        bs = 16 if contentless else next(
            (r.trace_block_size for r in trace.requests if r.trace_block_size), 16)
    notes = _late(trace.out_of_order)
    if any(r.output_token_ids is not None for r in trace.requests):
        notes.append("the trace gives output tokens: the curve counts prompt blocks (as cache "
                     "mode), an engine replay also caches the outputs a later prompt may repeat")
    if contentless:
        notes.append(f"{trace.format} trace: prompt lengths only, so every prompt is unique and "
                     "the hit rate is 0 by construction")
    return build_input(trace.requests, rule=rule, block_size=bs, warmup=warmup), bs, notes, trace


def _late(n: int) -> list[str]:
    said = out_of_order_warning(n, "taken")
    return [said] if said else []
