"""Read an event stream (`kvcli replay --events`) line by line and hand each event to a sink.

The stream is never held in memory: lines are parsed with orjson one at a time. Problems are
reported as `InputError` naming the file and the 1-based line number: a line that is not a JSON
object, an unknown `kind`, a `seq` out of order, a field missing or of the wrong type (`t_ms`,
`req` and `step` checked here, the rest where the sink takes them in, `stats/entry_checks.py`,
or named by `event_fields.misfit` where a sink trips; a sink's `InputError` or `FieldWorded`
names the field, the reader adds the file and the line), lines after `end`, or a stream that
stops without `end`/`interrupted` (truncated).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Protocol

import orjson

from kvcore.analysis.event_fields import (
    FieldWorded,
    misfit,
    shown,
    text_or_null_problem,
    time_problem,
)
from kvcore.engine.options import ARRIVALS
from kvcore.errors import InputError
from kvcore.sources import READ_ERRORS

SCHEMA_VERSION = 1
_INF = float("inf")
HEADER_PREFIX = b'{"kind":"header"'
# Open a stream to sniff with this buffer size (`kvcore.sources.open_source(buffer_size=...)`):
# more than the longest header line, so that one `peek` shows the whole first line.
SNIFF_BUFFER_SIZE = 1 << 16
# The longest line of an event stream (`kvcore.sources.MAX_LINE_BYTES` is a trace's): an `admit`
# line holds 20-digit hashes (and first tokens) per block and group, ~28 bytes a token at block
# size 1, 283 MB for a request at the token limit; parsing it takes ~2-3 times its bytes.
MAX_EVENT_LINE_BYTES = 1 << 30


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
    if hdr.get("schema_version") != SCHEMA_VERSION or type(hdr["schema_version"]) is not int:
        raise InputError(f"unsupported schema_version {hdr.get('schema_version')!r} "
                         f"(this kvcli reads {SCHEMA_VERSION})", path=name, line=1,
                         field="schema_version")
    for key in ("block_size", "num_blocks"):
        if not _positive_int(hdr.get(key)):
            raise InputError("missing or not a positive integer", path=name, line=1, field=key)
    _check_header_shapes(hdr, name)
    return hdr


def _positive_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _size(v: object) -> bool:
    return v is None or type(v) in (int, float) and 0 <= v < _INF   # type: ignore[operator]


_CONFIG_READ = (
    ("enable_prefix_caching", lambda v: type(v) is bool, "true or false"),
    ("kv_offloading_size", _size, "a size in GiB (a number >= 0) or null"),
    ("kv_offloading_size_chunks", lambda v: v is None or _positive_int(v),
     "a positive integer or null"),
    ("arrivals", lambda v: v in ARRIVALS, " or ".join(f'"{a}"' for a in ARRIVALS)),
)


def _check_header_shapes(hdr: dict, name: str) -> None:
    """The header's optional parts a reader takes apart, of the shapes a replay writes: a
    ``groups`` of 5 or "x", a ``config`` of 5 or an ``offload_block_size`` of "x" raised
    AttributeError or TypeError with a traceback before the first event was read."""
    def bad(field: str, msg: str) -> InputError:
        return InputError(msg, path=name, line=1, field=field)

    groups = hdr.get("groups")
    if groups is not None:
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise bad("groups", f"must be a list of objects (one a KV cache group), got "
                                f"{groups!r:.40}")
        for g in groups:
            if not isinstance(g.get("type", ""), str):
                raise bad("groups", f"a group's type must be a string, got {g['type']!r:.40}")
            if g.get("block_size") is not None and not _positive_int(g["block_size"]):
                raise bad("groups", f"a group's block_size must be a positive integer, got "
                                    f"{g['block_size']!r:.40}")
    # (what the report shows as the header has it: a `trace` of 5 or a `mode` of true came
    # out as the stream's trace and mode)
    if hdr.get("mode") not in ("engine", "cache"):
        raise bad("mode", f"must be \"engine\" or \"cache\", got {shown(hdr.get('mode'))}")
    if "trace" not in hdr or not (hdr["trace"] is None or isinstance(hdr["trace"], str)):
        raise bad("trace", "must be the trace's name (a string) or null, got "
                           + (shown(hdr["trace"]) if "trace" in hdr else "none"))
    clock = hdr.get("uncalibrated_clock")    # (absent: a stream from before it)
    if clock is not None and type(clock) is not bool:
        raise bad("uncalibrated_clock", f"must be true, false or null, got {shown(clock)}")
    hbs = hdr.get("hash_block_size")
    if hbs is not None and not _positive_int(hbs):
        raise bad("hash_block_size", f"must be a positive integer, got {shown(hbs)}")
    cfg = hdr.get("config")
    if not isinstance(cfg, dict):   # (none: a replay's CPU tier went unseen)
        raise bad("config", f"must be an object, got {cfg!r:.40}")
    obs = cfg.get("offload_block_size")
    if obs is not None and not _positive_int(obs):
        raise bad("config.offload_block_size", f"must be a positive integer, got {obs!r:.40}")
    # the other options the stats read (a `kv_offloading_size` of "no" was a CPU tier, an
    # `arrivals` of 5 a replay without latencies)
    for key, ok, what in _CONFIG_READ:
        if key in cfg and not ok(cfg[key]):
            raise bad(f"config.{key}", f"must be {what}, got {shown(cfg[key])}")


def read_stream(name: str, lines: Iterator[bytes], sink: EventSink) -> str:
    """Feed every event after the header to ``sink``; returns the last kind ('end' or 'interrupted').

    Line numbers in errors count the header as line 1.
    """
    handlers = sink.handlers
    advance = sink.advance
    cur_step = object()
    cur_t = object()
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
            # `t_ms` and `req` checked as they enter (a string `t_ms` went into the arithmetic
            # of the step's time, a `req` of 5 or true counted as a request of its own): a
            # step's lines share its start or its end, so the time's check runs about twice
            t = ev["t_ms"]
            if t != cur_t:
                if (problem := time_problem(t, ev)) is not None:
                    raise FieldWorded(problem, "t_ms")
                cur_t = t
            req = ev.get("req")
            if type(req) is not str and req is not None:    # (in line: every line has one)
                raise FieldWorded(text_or_null_problem(req, ev) or "", "req")
            step = ev["step"]
            if step != cur_step:
                # (a bool is no step: true was taken as step 1)
                if type(step) is not int or step < 0:
                    raise InputError(f"not a step number: {shown(step)}", path=name,
                                     line=lineno, field="step")
                advance(step, t)
                cur_step = step
            kind = ev["kind"]
            # (a list or an object is no kind: unhashable, it was a TypeError traceback)
            handler = handlers.get(kind) if isinstance(kind, str) else None
            if handler is None:
                raise InputError(f"unknown event kind {kind!r}", path=name, line=lineno,
                                 field="kind")
            handler(ev)
            if kind == "end" or kind == "interrupted":
                last = kind
    except InputError as err:
        if err.path is not None:
            raise
        # a sink's error about the event's field (`group`): this file and line
        raise InputError(err.message, path=name, line=lineno, field=err.field) from None
    except READ_ERRORS as err:          # a broken gzip stream
        raise InputError(f"cannot read: {err}", path=name) from None
    except orjson.JSONDecodeError as err:
        raise InputError(f"not JSON ({err}); truncated or corrupt stream", path=name,
                         line=lineno) from None
    except KeyError as err:
        raise InputError(f"missing in a {_kind(ev)} event", path=name, line=lineno,
                         field=str(err.args[0])) from None
    except FieldWorded as err:
        raise InputError(f"bad {_kind(ev)} event: {err}", path=name, line=lineno,
                         field=err.field) from None
    except (TypeError, ValueError, IndexError, AttributeError) as err:
        if (bad := misfit(ev)) is not None:
            raise InputError(f"bad {_kind(ev)} event: {bad[1]}", path=name, line=lineno,
                             field=bad[0]) from None
        raise InputError(f"bad {_kind(ev)} event: {err}", path=name, line=lineno) from None
    if last is None:
        raise InputError("truncated stream: ends without an 'end' (or 'interrupted') line",
                         path=name, line=lineno)
    return last


def _kind(ev) -> str:
    return repr(ev.get("kind")) if isinstance(ev, dict) else "non-object"
