"""Trace readers: one JSON object a line (or Azure's CSV), `.gz` and `-` (stdin) accepted.

    from kvcore.traces import read_trace
    trace = read_trace("conversation_trace.jsonl")
    trace.format          # "mooncake" | "bailian" | "tokens" | "lengths" | "azure"
    trace.config          # the optional first line {"config": {...}} (defaults that flags override)
    for r in trace.requests:          # arrival order: timestamp, ties in file order
        r.id, r.arrival_ms, r.prompt_len, r.output_len
        r.prompt_tokens()             # token ids (derived from hash_ids when needed)
        r.trace_blocks()              # [(trace block key, tokens), ...]

`read_trace(path, keep=K)` holds at most K requests: a longer trace in a file comes back as a
`TraceStream` (`stream.py`) that reads its requests again, in arrival order, when iterated.

Formats are detected from the first request's fields (`formats.detect`); every malformed line is
an `InputError` naming the file, the line and the field. Inputs are opened by `kvcore.sources`.
"""

from kvcore.traces.reader import Trace, out_of_order_warning, read_trace
from kvcore.traces.request import TraceRequest

__all__ = ["Trace", "TraceRequest", "out_of_order_warning", "read_trace"]
