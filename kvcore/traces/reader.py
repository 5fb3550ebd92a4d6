"""Read a whole trace into `TraceRequest`s in arrival order (see `kvcore.traces`)."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import orjson

from kvcore.errors import InputError
from kvcore.sources import close_source, open_source, text_lines
from kvcore.traces import fast_ids
from kvcore.traces.formats import MAX_REQUEST_TOKENS, PARSERS, _Ctx, detect, parse_azure_row
from kvcore.traces.request import TraceRequest


@dataclass(slots=True)
class Trace:
    path: str
    format: str
    config: dict = field(default_factory=dict)       # the optional first {"config": {...}} line
    config_line: int | None = None
    requests: list[TraceRequest] = field(default_factory=list)  # arrival order (stable)
    # requests whose timestamp is earlier than one on a line before them (replayed in
    # timestamp order all the same; the replay warns)
    out_of_order: int = 0


def read_trace(path: str) -> Trace:
    """Read, validate and order a trace (a path, or ``-`` for stdin; gzip ok). Raises
    `InputError` (file:line: field) on bad input."""
    name, stream = open_source(path)
    try:
        lines = _content_lines(name, stream)
        ctx = _Ctx(name)
        first = next(lines, None)
        if first is None:
            raise InputError("empty trace: no requests", path=name, line=1)
        ctx.line, text = first
        # a JSON line (an object, or a list the JSON reader refuses by its type) or Azure's CSV
        if text.startswith("TIMESTAMP") or (text[0] not in "{[" and "," in text):
            trace = _read_csv(path, ctx, first, lines)
        else:
            trace = _read_jsonl(path, ctx, first, lines)
    finally:
        close_source(stream)
    if not trace.requests:
        raise InputError("empty trace: no requests", path=name, line=(ctx.line or 1))
    latest = -math.inf
    for r in trace.requests:
        if r.arrival_ms < latest:
            trace.out_of_order += 1
        latest = max(latest, r.arrival_ms)
    # Arrival order: timestamp, ties in file order (a stable sort keeps file order).
    trace.requests.sort(key=lambda r: r.arrival_ms)
    return trace


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
        raise ctx.err(None, f"malformed JSON: {err}") from None
    if not isinstance(obj, dict):
        raise ctx.err(None, "expected a JSON object")
    return obj


def _read_jsonl(path: str, ctx: _Ctx, first, lines) -> Trace:
    trace = Trace(path=path, format="")
    obj = _decode(first[1], ctx)
    pending = [(ctx.line, obj)]
    if "config" in obj:
        cfg = obj["config"]
        if cfg is not None and not isinstance(cfg, dict):
            raise ctx.err("config", "must be an object")
        trace.config = dict(cfg or {})
        trace.config_line = ctx.line
        pending = []
    parser = None
    seen: set[str] = set()

    def add(n: int, o: dict) -> None:
        nonlocal parser
        ctx.line = n
        if parser is None:
            try:
                trace.format = detect(o)
            except ValueError as err:
                raise ctx.err(None, str(err)) from None
            parser = PARSERS[trace.format]
        req = parser(o, ctx, len(trace.requests))
        if req.id in seen:
            raise ctx.err("id", f"duplicate request id {req.id!r}")
        seen.add(req.id)
        trace.requests.append(req)

    for n, o in pending:
        add(n, o)
    fast = fast_ids.available()
    for n, text in lines:
        ctx.line = n
        # (only where the token-id parser reads the prompt ids: its format, or not known yet)
        got = (fast_ids.cut_prompt(text, MAX_REQUEST_TOKENS)
               if fast and trace.format in ("", "tokens") else None)
        if got is not None:         # the prompt's ids read in C (compiled build): no bools
            ctx.no_bools = False
            obj, ctx.prompt_ids = got
            add(n, obj)
            ctx.prompt_ids = None
            continue
        ctx.no_bools = "true" not in text and "false" not in text
        add(n, _decode(text, ctx))
    ctx.no_bools = False
    return trace


def _read_csv(path: str, ctx: _Ctx, first, lines) -> Trace:
    header = [h.strip() for h in first[1].split(",")]
    if header != ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]:
        raise ctx.err(None, "CSV header must be TIMESTAMP,ContextTokens,GeneratedTokens "
                            "(Azure LLM inference trace)")
    trace = Trace(path=path, format="azure")
    for n, text in lines:
        ctx.line = n
        row = next(csv.reader([text]))
        trace.requests.append(parse_azure_row(row, ctx, len(trace.requests)))
    return trace
