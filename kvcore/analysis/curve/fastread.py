"""A whole-file reader for plain Mooncake traces, for `kvcli curve` only.

The curve needs three arrays from a hash-id trace (prompt lengths, hash ids, ids per request), not
a `TraceRequest` object per line. For the common case, a Mooncake file whose every line holds
exactly ``timestamp``, ``input_length``, ``output_length`` and ``hash_ids``, one `orjson.loads`
over the whole file and a few checks done over whole columns give those arrays at a fraction of
the per-line reader's cost.

It accepts exactly what `kvcore.traces.read_trace` accepts and orders requests the same way
(timestamp, ties in file order). Anything else, including every kind of bad input, returns None
and the caller falls back to `read_trace`, which reports the problem as ``file:line: field``.
"""

from __future__ import annotations

import gc
import itertools
from dataclasses import dataclass
from operator import itemgetter

import numpy as np
import orjson

from kvcore.errors import InputError
from kvcore.sources import MAX_LINE_BYTES, READ_ERRORS, STDIN, is_pipe, open_source
from kvcore.traces.formats import MAX_REQUEST_TOKENS, MAX_TIMESTAMP_MS

# = kvcore.traces.formats.MOONCAKE_BLOCK (a test checks it), not imported: the trace package
# costs start-up time that this path exists to save.
MOONCAKE_BLOCK = 512
INT, FLOAT = np.dtype(np.int64), np.dtype(np.float64)


@dataclass(slots=True)
class HashIdTrace:
    """A Mooncake trace as arrays, requests in arrival order."""

    path: str
    num_tokens: np.ndarray   # int64 per request: input_length
    lens: np.ndarray         # int64 per request: number of hash ids
    ids: np.ndarray          # int64, every request's hash ids concatenated
    trace_block_size: int = MOONCAKE_BLOCK
    format: str = "mooncake"
    out_of_order: int = 0    # requests earlier than a line before them (as `Trace`'s)

    @property
    def num_requests(self) -> int:
        return len(self.num_tokens)


def _read_bytes(path: str) -> bytes | None:
    if path == STDIN or is_pipe(path):
        return None      # stdin (or a pipe) can be read once only: the full reader takes it
    try:
        _, stream = open_source(path)
    except InputError:
        return None      # the full reader words it
    try:
        # past the line bound, the line reader takes it (and words an endless line): a 4 GB
        # stream of zeros (18 MB gzipped) was read whole here until memory ran out
        raw = stream.read(MAX_LINE_BYTES + 1)
        return raw if len(raw) <= MAX_LINE_BYTES else None
    except READ_ERRORS:
        return None
    finally:
        stream.close()


def _column(values: list, kinds: tuple, minimum: float,
            maximum: float = np.inf) -> np.ndarray | None:
    """`values` as one numpy array when numpy infers one of `kinds` (so no strings, nested
    lists or huge ints slipped in) and every value is within [minimum, maximum]; else None."""
    try:
        arr = np.array(values)
    except (ValueError, OverflowError):
        return None
    if (arr.ndim != 1 or arr.dtype not in kinds or not len(arr) or arr.min() < minimum
            or arr.max() > maximum):
        return None
    return arr


def read_hash_id_trace(path: str) -> HashIdTrace | None:
    """The trace as arrays, or None when it is not a plain Mooncake file (see module doc)."""
    raw = _read_bytes(path)
    if raw is None:
        return None
    body = raw.strip()
    if not body:
        return None
    if b"#" in body or b"\n\n" in body.replace(b"\r", b""):
        lines = [ln for ln in body.split(b"\n")
                 if ln.strip() and not ln.lstrip().startswith(b"#")]
        body, count = b",".join(lines), len(lines)
    else:       # no comments, no blank lines: one object a line, joined with commas in C
        count = body.count(b"\n") + 1
        body = body.replace(b"\n", b",")
    enabled = gc.isenabled()
    gc.disable()    # ~300k ints and 24k containers, no cycles: no collections needed
    try:
        objs = orjson.loads(b"[" + body + b"]")
    except orjson.JSONDecodeError:
        return None
    finally:
        if enabled:
            gc.enable()
    # One object a line (a line holding "{..},{..}" would add an element), each with exactly
    # the four fields (4 keys, all found below): no config line, ids, priorities or per-line
    # block sizes.
    if len(objs) != count or set(map(type, objs)) != {dict} or set(map(len, objs)) != {4}:
        return None
    # A key given twice reads as its last (4 keys all the same): 4 members a line, each with
    # `":` after its key, and no key spaced from its colon, or the full reader says which line
    # (`traces/repeated_keys.py`)
    if (body.count(b'":') != 4 * count or b'" ' in body or b'"\t' in body
            or b'"\r' in body):
        return None
    # JSON true/false/null anywhere: numpy would take a bool for an int; let the full reader
    # decide (a boolean or null field is an error or a default there).
    if b"true" in raw or b"false" in raw or b"null" in raw:
        return None
    try:
        id_lists, n_in, n_out, ts = (list(map(itemgetter(k), objs)) for k in (
            "hash_ids", "input_length", "output_length", "timestamp"))
    except KeyError:
        return None
    if set(map(type, id_lists)) != {list}:
        return None
    # Past the bound a request may hold (`MAX_REQUEST_TOKENS`): the full reader says which line.
    num_tokens = _column(n_in, (INT,), 1, MAX_REQUEST_TOKENS)
    out_ok = _column(n_out, (INT,), 1, MAX_REQUEST_TOKENS) is not None
    arrival = _column(ts, (INT, FLOAT), 0, MAX_TIMESTAMP_MS)
    ids = _column(list(itertools.chain.from_iterable(id_lists)), (INT,), 0)
    if num_tokens is None or not out_ok or arrival is None or ids is None:
        return None
    lens = np.fromiter(map(len, id_lists), dtype=np.int64, count=len(id_lists))
    if np.any(lens != -(-num_tokens // MOONCAKE_BLOCK)):
        return None
    late = int(np.count_nonzero(arrival[1:] < np.maximum.accumulate(arrival)[:-1]))
    if late:                                   # not in arrival order: a stable reorder
        order = np.argsort(arrival, kind="stable")
        starts = np.concatenate(([0], np.cumsum(lens)))
        lens, num_tokens = lens[order], num_tokens[order]
        new_starts = np.concatenate(([0], np.cumsum(lens)))
        ids = ids[np.repeat(starts[order] - new_starts[:-1], lens) + np.arange(len(ids))]
    return HashIdTrace(path=path, num_tokens=num_tokens, lens=lens, ids=ids, out_of_order=late)
