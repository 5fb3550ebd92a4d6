"""Read an event stream (`kvcli replay --events`) line by line and hand each event to a sink.

The stream is never held in memory: lines are parsed with orjson one at a time. Problems are
reported as `InputError` naming the file and the 1-based line number: a line that is not a JSON
object, an unknown `kind`, a `seq` out of order, a field missing or of the wrong type (caught
where the sink uses it), lines after `end`, or a stream that stops without `end`/`interrupted`
(truncated).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Protocol

import orjson

from kvcore.errors import InputError
from kvcore.sources import READ_ERRORS

SCHEMA_VERSION = 1
HEADER_PREFIX = b'{"kind":"header"'
# Open a stream to sniff with this buffer size (`kvcore.sources.open_source(buffer_size=...)`):
# more than the longest header line, so that one `peek` shows the whole first line.
SNIFF_BUFFER_SIZE = 1 << 16


class EventSink(Protocol):
    """What `read_stream` feeds: ``handlers`` maps each kind to a bound method taking the event;
    ``advance(step, t_ms)`` is called before the first event of every new step."""

    handlers: dict

    def advance(self, step: int, t_ms: float) -> None: ...


def is_event_header(line: bytes) -> bool:
    """True when the line is our stream's header (`{"kind":"header",...}`), whitespace allowed."""
    stripped = line.lstrip()
    if stripped.startswith(HEADER_PREFIX):
        return True
    if not stripped.startswith(b"{"):
        return False
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(obj, dict) and obj.get("kind") == "header"


def is_event_stream(name: str, stream: io.BufferedReader) -> bool:
    """True when the stream is kvcli's event stream (its first line is the header), False for
    anything else (a trace); vLLM's own KV event format is an `InputError`. Nothing is consumed:
    the first line is only peeked at, so the stream can go whole to either reader."""
    try:
        first = stream.peek(SNIFF_BUFFER_SIZE).split(b"\n", 1)[0]
    except READ_ERRORS as err:          # a broken gzip stream
        raise InputError(f"cannot read: {err}", path=name) from None
    if is_event_header(first):
        return True
    if first.lstrip().startswith(b'{"ts"') and b'"events"' in first:
        raise InputError("this is vLLM's KV event format; stats read kvcli's own event stream "
                         "(the replay's default events format) or a trace", path=name, line=1)
    return False


def parse_header(line: bytes, name: str) -> dict:
    if not line:
        raise InputError("empty event stream (no header line)", path=name, line=1)
    try:
        hdr = orjson.loads(line)
    except orjson.JSONDecodeError as err:
        raise InputError(f"not JSON: {err}", path=name, line=1) from None
    if not isinstance(hdr, dict) or hdr.get("kind") != "header":
        raise InputError("the first line must be the header ({\"kind\": \"header\", ...})",
                         path=name, line=1, field="kind")
    if hdr.get("schema_version") != SCHEMA_VERSION:
        raise InputError(f"unsupported schema_version {hdr.get('schema_version')!r} "
                         f"(this kvcli reads {SCHEMA_VERSION})", path=name, line=1,
                         field="schema_version")
    for key, typ in (("block_size", int), ("num_blocks", int)):
        if not isinstance(hdr.get(key), typ) or hdr[key] <= 0:
            raise InputError("missing or not a positive integer", path=name, line=1, field=key)
    return hdr


def read_stream(name: str, lines: Iterator[bytes], sink: EventSink) -> str:
    """Feed every event after the header to ``sink``; returns the last kind ('end' or 'interrupted').

    Line numbers in errors count the header as line 1.
    """
    handlers = sink.handlers
    advance = sink.advance
    cur_step = object()
    loads = orjson.loads
    lineno = 1
    seq = 0
    last = None
    ev = None
    try:
        for lineno, line in enumerate(lines, start=2):
            if last is not None:
                if line.strip():
                    raise InputError(f"data after the '{last}' line", path=name, line=lineno)
                continue
            ev = loads(line)
            if ev["seq"] != seq:
                raise InputError(f"expected seq {seq}, got {ev['seq']!r} (lines missing or out of "
                                 "order)", path=name, line=lineno, field="seq")
            seq += 1
            step = ev["step"]
            if step != cur_step:
                if not isinstance(step, int) or step < 0:
                    raise InputError(f"not a step number: {step!r}", path=name, line=lineno,
                                     field="step")
                advance(step, ev["t_ms"])
                cur_step = step
            kind = ev["kind"]
            handler = handlers.get(kind)
            if handler is None:
                raise InputError(f"unknown event kind {kind!r}", path=name, line=lineno,
                                 field="kind")
            handler(ev)
            if kind == "end" or kind == "interrupted":
                last = kind
    except InputError:
        raise
    except READ_ERRORS as err:          # a broken gzip stream
        raise InputError(f"cannot read: {err}", path=name) from None
    except orjson.JSONDecodeError as err:
        raise InputError(f"not JSON ({err}); truncated or corrupt stream", path=name,
                         line=lineno) from None
    except KeyError as err:
        raise InputError(f"missing in a {_kind(ev)} event", path=name, line=lineno,
                         field=str(err.args[0])) from None
    except (TypeError, ValueError, IndexError, AttributeError) as err:
        raise InputError(f"bad {_kind(ev)} event: {err}", path=name, line=lineno) from None
    if last is None:
        raise InputError("truncated stream: ends without an 'end' (or 'interrupted') line",
                         path=name, line=lineno)
    return last


def _kind(ev) -> str:
    return repr(ev.get("kind")) if isinstance(ev, dict) else "non-object"
