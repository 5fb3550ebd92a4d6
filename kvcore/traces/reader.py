"""Read a trace into `TraceRequest`s in arrival order, whole or as a stream (see `kvcore.traces`)."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import orjson

from kvcore.errors import InputError, clipped, path_label
from kvcore.sources import close_source, open_source, text_lines
from kvcore.traces import fast_ids, repeated_keys
from kvcore.traces.azure_csv import parse_azure_row
from kvcore.traces.fields import near_misses
from kvcore.traces.formats import PARSERS, detect
from kvcore.traces.limits import MAX_REQUEST_TOKENS
from kvcore.traces.line_values import _Ctx
from kvcore.traces.request import TraceRequest
from kvcore.traces.stream import Survey, TraceStream
from kvcore.vllm_values import VLLM_KEYS


def out_of_order_warning(n: int, done: str = "replayed") -> str | None:
    """The warning for `n` requests with a timestamp earlier than a line before them (None for
    0): every command takes them in timestamp order."""
    return (f"{n:,} request(s) have a timestamp earlier than a line before them: {done} in "
            "timestamp order (ties in file order)") if n else None


@dataclass(slots=True)
class Trace:
    path: str                   # as given (read again by a `TraceStream`); `label` shows it
    format: str
    config: dict = field(default_factory=dict)       # the optional first {"config": {...}} line
    config_line: int | None = None
    # arrival order (stable); a `TraceStream` (read again from the file) for a trace of more
    # requests than `read_trace`'s ``keep``
    requests: list[TraceRequest] | TraceStream = field(default_factory=list)
    # requests whose timestamp is earlier than one on a line before them (replayed in
    # timestamp order all the same; the replay warns)
    out_of_order: int = 0
    # the first request's fields that nearly spell one its format reads (`fields.near_misses`:
    # a 'timestmap' reads as no timestamp), and its line
    near_misses: list[tuple[str, str]] = field(default_factory=list)
    near_miss_line: int = 0
    # over every request, whether kept or streamed (`Survey`)
    prompt_tokens: int = 0                              # their prompt tokens
    output_tokens: int = 0                              # their output lengths
    first_arrival_ms: float = 0.0
    last_arrival_ms: float = 0.0
    max_total_tokens: int = 0                           # the longest prompt + output
    max_prompt_tokens: int = 0                          # the longest prompt
    lora_names: list[str] = field(default_factory=list)  # in file order of first appearance

    @property
    def config_keys(self) -> dict[str, str]:
        """The keys the config line set: kvcli's name -> the line's spelling. The line may use
        vLLM's names (`prefix_caching_hash_algo` for hash_algo: `options.resolve` reads both),
        so whatever asks whether the line set an option asks here, and names it as written
        (a check of `config` alone missed vLLM's spellings: their warnings went unsaid)."""
        return {VLLM_KEYS.get(k, k): k for k in self.config}

    @property
    def label(self) -> str:
        """The path as outputs record it (`kvcore.errors.path_label`)."""
        return path_label(self.path)

    def held(self) -> list[TraceRequest]:
        """The requests of a trace read whole (`read_trace` without ``keep``)."""
        assert isinstance(self.requests, list), "a trace read whole"
        return self.requests


def read_trace(path: str, *, keep: int | None = None) -> Trace:
    """Read, validate and order a trace (a path, or ``-`` for stdin; gzip ok). Raises
    `InputError` (file:line: field) on bad input. With ``keep``, a trace of more requests than
    that in a file that can be read again is not held: its `requests` are a `TraceStream`,
    which reads them again, one at a time, in arrival order (`kvcore.traces.stream`)."""
    name, stream = open_source(path)
    trace = Trace(path=path, format="")
    survey = Survey()
    kept: list[TraceRequest] | None = []
    seen: set[str] | None = set()
    rereadable = keep is not None and path != "-" and os.path.isfile(path)
    # (a file replaced or edited while this reading ran: the stream would read again what
    # this reading never checked nor counted, the survey's totals another file's)
    before = _stamp(path) if rereadable else None
    try:
        for req in _file_requests(name, stream, trace):
            survey.add(req)
            if seen is not None:
                _check_unique(req, seen, name)
            if kept is not None:
                kept.append(req)
                if rereadable and len(kept) > keep:     # type: ignore[operator]
                    survey.hash_ids(kept)               # duplicates: by hash from here on
                    kept = seen = None
    finally:
        close_source(stream)
    if not survey.count:
        raise InputError("empty trace: no requests", path=name,
                         line=survey.last_line or trace.config_line or 1)
    survey.fill(trace)
    if kept is None:
        if _stamp(path) != before:
            raise InputError("the trace changed while it was read (a trace of more than "
                             f"{keep:,} requests is read twice: it must stay as it is)", path=path)
        if survey.id_collision():
            _raise_duplicate(path)
        trace.requests = TraceStream(path, survey)
        return trace
    # Arrival order: timestamp, ties in file order (a stable sort keeps file order).
    kept.sort(key=lambda r: r.arrival_ms)
    trace.requests = kept
    return trace


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:         # (removed meanwhile: a change too)
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def file_requests(path: str, trace: Trace | None = None) -> Iterator[TraceRequest]:
    """The requests of the trace at `path` in file order, read and checked one line at a time
    (`trace`, when given, gets the format and the config line)."""
    name, stream = open_source(path)
    try:
        yield from _file_requests(name, stream, trace or Trace(path=path, format=""))
    finally:
        close_source(stream)


def _raise_duplicate(path: str) -> None:
    """Two ids share a hash: read the ids again to name the line of the first duplicate (none
    when the hashes merely collide)."""
    seen: set[str] = set()
    for req in file_requests(path):
        _check_unique(req, seen, path)


def _check_unique(req: TraceRequest, seen: set[str], name: str) -> None:
    """`req`'s id is not among `seen` (bad input, naming its line), and now is."""
    if req.id in seen:
        raise InputError(f"duplicate request id {clipped(req.id)} (a line without an id is named by "
                         "its place in the trace, which may be another line's id)", path=name,
                         line=req.line, field="id")
    seen.add(req.id)


def _file_requests(name: str, stream, trace: Trace) -> Iterator[TraceRequest]:
    lines = _content_lines(name, stream)
    ctx = _Ctx(name)
    first = next(lines, None)
    if first is None:
        return
    ctx.line, text = first
    # a JSON line (an object, or a list the JSON reader refuses by its type) or Azure's CSV
    if text.startswith("TIMESTAMP") or (text[0] not in "{[" and "," in text):
        yield from _read_csv(trace, ctx, first, lines)
    else:
        yield from _read_jsonl(trace, ctx, first, lines)


def _content_lines(name: str, stream) -> Iterator[tuple[int, str]]:
    """Non-blank, non-comment lines, stripped, with their 1-based line numbers."""
    for n, text in text_lines(name, stream):
        s = text.strip()
        if s and not s.startswith("#"):
            yield n, s


def _decode(text: str, ctx: _Ctx) -> dict:
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError as err:
        if str(err).startswith("Not enough memory"):    # (orjson's word for a failed malloc)
            raise ctx.err(None, f"not enough memory to parse this line ({len(text):,} "
                          "characters)") from None
        raise ctx.err(None, f"malformed JSON: {err}") from None
    if not isinstance(obj, dict):
        raise ctx.err(None, "expected a JSON object")
    repeated_keys.check(text, obj, ctx.path, ctx.line)
    return obj


def _not_a_trace(obj: dict, ctx: _Ctx) -> None:
    """An event stream given where a trace goes: its own line (its header holds a `config`, which
    read as a config line, and the error came at line 2 as 'unknown trace format')."""
    if obj.get("kind") == "header" and "schema_version" in obj:
        raise ctx.err(None, "this is kvcli's event stream (replay --events), not a trace: "
                            "kvcli stats reads it")
    if "ts" in obj and "events" in obj:
        raise ctx.err(None, "this is vLLM's KV event format (events-format vllm), not a trace")


def _read_jsonl(trace: Trace, ctx: _Ctx, first, lines) -> Iterator[TraceRequest]:
    obj = _decode(first[1], ctx)
    _not_a_trace(obj, ctx)
    pending = [(ctx.line, obj)]
    if "config" in obj:
        if len(obj) > 1:
            extra = ", ".join(repr(k) for k in obj if k != "config")
            raise ctx.err(None, f"a config line holds only 'config'; unknown key(s) {extra} (the "
                                "options go inside it)")
        cfg = obj["config"]
        if cfg is not None and not isinstance(cfg, dict):
            raise ctx.err("config", "must be an object")
        trace.config = dict(cfg or {})
        trace.config_line = ctx.line
        pending = []
    parser = None
    index = 0

    def parse(n: int, o: dict) -> TraceRequest:
        nonlocal parser, index
        ctx.line = n
        if parser is None:
            try:
                trace.format = detect(o)
            except ValueError as err:
                raise ctx.err(None, str(err)) from None
            parser = PARSERS[trace.format]
            trace.near_misses, trace.near_miss_line = near_misses(o, trace.format), n
        index += 1
        return parser(o, ctx, index - 1)

    for n, o in pending:
        yield parse(n, o)
    fast = fast_ids.available()
    for n, text in lines:
        ctx.line = n
        # (only where the token-id parser reads the prompt ids: its format, or not known yet)
        got = (fast_ids.cut_prompt(text, MAX_REQUEST_TOKENS)
               if fast and trace.format in ("", "tokens") else None)
        if got is not None:         # the prompt's ids read in C (compiled build): no bools
            ctx.no_bools = False
            obj, ctx.prompt_ids = got
            repeated_keys.check(text, obj, ctx.path, n)
            req = parse(n, obj)
            ctx.prompt_ids = None
            yield req
            continue
        ctx.no_bools = "true" not in text and "false" not in text
        req = parse(n, _decode(text, ctx))
        ctx.no_bools = False
        yield req


def _read_csv(trace: Trace, ctx: _Ctx, first, lines) -> Iterator[TraceRequest]:
    header = [h.strip() for h in first[1].split(",")]
    if header != ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]:
        raise ctx.err(None, "CSV header must be TIMESTAMP,ContextTokens,GeneratedTokens "
                            "(Azure LLM inference trace)")
    trace.format = "azure"
    for index, (n, text) in enumerate(lines):
        ctx.line = n
        try:
            row = next(csv.reader([text]))
        except csv.Error as err:
            # (a column of more than csv's field_size_limit, 128 KiB: a traceback; no count,
            # date or number is that long)
            raise ctx.err(None, f"malformed CSV row: {err}") from None
        yield parse_azure_row(row, ctx, index)
