"""The trace formats, detected from the fields of the first request (`detect`).

| format   | fields                                                                 | block ids      |
|----------|------------------------------------------------------------------------|----------------|
| mooncake | timestamp (ms), input_length, output_length, hash_ids[, block_size]    | 512 tokens     |
| bailian  | chat_id, parent_chat_id, timestamp (s), turn, type, input_length, ... | 16 tokens      |
| tokens   | prompt_token_ids, output_length | output_token_ids, [id, timestamp (ms), arrival_step, priority, cache_salt, lora] | - |
| lengths  | input_length, output_length[, timestamp (ms)]: every prompt unique    | -              |
| azure    | CSV TIMESTAMP,ContextTokens,GeneratedTokens: every prompt unique       | -              |

Each parser turns one decoded object into a `TraceRequest` or raises `InputError` naming the field
(the Azure CSV rows: `azure_csv.py`).
"""

from __future__ import annotations

from array import array as _array
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.traces.names import name_field as _name
from kvcore.traces.names import request_id as _rid
from kvcore.traces.request import TraceRequest

MOONCAKE_BLOCK = 512
BAILIAN_BLOCK = 16
# Prompts with no content (lengths, azure) get fresh trace block ids of this size from a counter,
# so every prompt is unique content.
UNIQUE_BLOCK = 512
# Prompt lengths only: hit rate 0 by construction, which a summary says (`prompt_content`)
CONTENTLESS_FORMATS = frozenset({"lengths", "azure"})


# The most tokens one request may have, prompt or output: 10 million, the longest context of any
# model released (Llama 4 Scout; real traces stay under 200k). A request's prompt becomes token
# ids in memory (about 40 bytes a token) when it is replayed, so a line beyond this could take
# the machine's memory (a 10 MB line of 1.3M hash ids of 512 tokens is 666M tokens, 27 GB).
MAX_REQUEST_TOKENS = 10_000_000
# Arrival times in ms, at most 10^13 (about 317 years; Unix times in ms are 1.7e12): there a
# float still holds microseconds. At 10^20 ms a 5 ms step added to the clock left it unchanged
# (a cluster's metrics clock never moved on: it hung), and every latency would have read 0.
MAX_TIMESTAMP_MS = 1e13
# Arrival steps (`--arrivals step`), at most 2^53: the step lines and events carry every step
# after it, exact in a JSON reader that holds numbers as doubles (jq, JavaScript) only below
# 2^53. An arrival_step of 10^20 raised OverflowError (a traceback) in the trace survey's
# int64 array, and one of 2^63 - 1 in `kvcli stats`' step columns a few steps later.
MAX_ARRIVAL_STEP = 1 << 53


class _Ctx:
    """Where we are (for errors) and counters shared across lines."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.line = 0
        self.next_unique_id = 0
        self.t0: datetime | None = None
        # True when the line being parsed has no JSON `true` / `false` anywhere (the reader sets
        # it from the line's text): then no list on it can hold a bool (`_int_list`)
        self.no_bools = False
        # The line's prompt ids as array("Q") when `fast_ids.cut_prompt` read them (in C,
        # digits only: no bool among them); `_ids` takes them for `prompt_token_ids`
        self.prompt_ids: _array | None = None

    def err(self, field: str | None, msg: str) -> InputError:
        return InputError(msg, path=self.path, line=self.line, field=field)


def _int(obj: dict, key: str, ctx: _Ctx, *, default: Any = ..., minimum: int = 0,
         maximum: int | None = None) -> int:
    if key not in obj or obj[key] is None:
        if default is ...:
            raise ctx.err(key, "missing")
        return default
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v):
        raise ctx.err(key, f"must be an integer, got {clipped(v)}")
    v = int(v)
    if v < minimum:
        raise ctx.err(key, f"must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise ctx.err(key, f"{v:,} tokens is more than the limit of {maximum:,} tokens a "
                           f"request")
    return v


def _priority(obj: dict, ctx: _Ctx) -> int:
    """A request's priority (default 0) in vLLM 0.33's API range, a 64-bit integer (its
    protocols' ``Field(ge=-(2**63), le=2**63 - 1)``: past it the request is refused there).
    orjson reads an integer literal past 64 bits as a double (10**30 was taken as
    1000000000000000019884624838656), one just below -2**63 rounded to -2**63 itself: a
    double there is refused too."""
    v = obj.get("priority")
    low = -(1 << 63)
    if (isinstance(v, float) and not low < v < -low) or (type(v) is int and not low <= v < -low):
        raise ctx.err("priority", f"must be a 64-bit integer (-2**63 to 2**63 - 1, vLLM's API "
                                  f"range), got {clipped(v)}")
    return _int(obj, "priority", ctx, default=0, minimum=low)


def _tokens(obj: dict, key: str, ctx: _Ctx, **kw: Any) -> int:
    """A token count (input_length, output_length): >= 1 and within `MAX_REQUEST_TOKENS`."""
    return _int(obj, key, ctx, minimum=1, maximum=MAX_REQUEST_TOKENS, **kw)


def _check_ids(ids: list, key: str, ctx: _Ctx, tokens_per_id: int | None = None) -> None:
    """A list of hash ids (`tokens_per_id` tokens each) or token ids within the limit."""
    per = tokens_per_id or 1
    if len(ids) > -(-MAX_REQUEST_TOKENS // per):
        what = (f"{len(ids):,} token ids" if tokens_per_id is None else
                f"{len(ids):,} trace blocks ({len(ids) * per:,} tokens)")
        raise ctx.err(key, f"{what} is more than the limit of {MAX_REQUEST_TOKENS:,} tokens a "
                           f"request")


def _num(obj: dict, key: str, ctx: _Ctx, default: float = 0.0) -> float:
    v = obj.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ctx.err(key, f"must be a number, got {clipped(v)}")
    if v < 0:
        raise ctx.err(key, f"must be >= 0, got {v}")
    return float(v)


def _timestamp(obj: dict, ctx: _Ctx, scale: float = 1.0) -> float:
    """The arrival time in ms (the trace's ``timestamp`` times ``scale``), within
    `MAX_TIMESTAMP_MS`."""
    t = _num(obj, "timestamp", ctx) * scale
    _check_time(t, "timestamp", ctx)
    return t


def _check_time(t_ms: float, key: str, ctx: _Ctx) -> None:
    if t_ms > MAX_TIMESTAMP_MS:
        raise ctx.err(key, f"is {t_ms:.6g} ms, past the limit of {MAX_TIMESTAMP_MS:.0e} ms (about "
                           "317 years: beyond it the clock cannot keep steps apart)")


def _arrival_step(obj: dict, ctx: _Ctx) -> int:
    """The optional ``arrival_step`` (default 0), within `MAX_ARRIVAL_STEP`."""
    step = _int(obj, "arrival_step", ctx, default=0)
    if step > MAX_ARRIVAL_STEP:
        raise ctx.err("arrival_step", f"is {step:,}, past the limit of 2^53 = "
                                      f"{MAX_ARRIVAL_STEP:,} steps")
    return step


def _int_list(obj: dict, key: str, ctx: _Ctx) -> list[int]:
    return _ids(obj, key, ctx)[0]


def _ids(obj: dict, key: str, ctx: _Ctx) -> tuple[list[int], _array | None]:
    """The list of non-negative integer ids at ``key``, and the same ids as ``array("Q")`` (the
    check builds it; None for ids of 2**64 and more)."""
    v = obj.get(key)
    if not isinstance(v, list):
        raise ctx.err(key, "missing" if v is None else "must be a list of integers")
    if ctx.prompt_ids is not None and key == "prompt_token_ids":
        return v, ctx.prompt_ids
    # Fast path in C (a trace has millions of ids); the loop finds the bad one. `array("Q")`
    # takes only ints in [0, 2**64): a float, a string, None or a negative id fails it. A bool
    # passes it (True is 1): none can be there when the line has no `true` / `false` (a
    # substring search of the line, ~1 instruction a byte), and one can hide only where the
    # smallest id is 0 or 1. (`min` took 8% of `benchmarks/sched_vs_vllm.py`'s instructions:
    # ~200 a token id; the set of types is slower still.)
    try:
        arr = _array("Q", v)
        if not v or ctx.no_bools or min(v) > 1 or set(map(type, v)) <= {int}:
            return v, arr
    except (TypeError, OverflowError):
        arr = None
    for x in v:
        if isinstance(x, float) and x >= 2**64:
            # the JSON reader takes an integer past 2^64 - 1 as a float: 'got 1.8446744073709552e+19'
            # did not look like what the line holds
            raise ctx.err(key, f"must hold integers below 2^64, got {x:.6g} (an integer this "
                          "large reads as a float)")
        if isinstance(x, bool) or not isinstance(x, int) or x < 0:
            raise ctx.err(key, f"must hold non-negative integers, got {clipped(x)}")
    return v, arr


def _hashed(obj: dict, ctx: _Ctx, index: int, *, tb: int, ts_scale: float, rid: str) -> TraceRequest:
    tb = _int(obj, "block_size", ctx, default=tb, minimum=1, maximum=MAX_REQUEST_TOKENS)
    v = obj.get("hash_ids")
    if isinstance(v, list):     # the limit first: the message says what the line holds
        _check_ids(v, "hash_ids", ctx, tb)
    n_in = _tokens(obj, "input_length", ctx)
    n_out = _tokens(obj, "output_length", ctx)
    listed, packed = _ids(obj, "hash_ids", ctx)
    # kept as the check's array("Q") where it made one: 8 bytes an id, where the list held about
    # 40 (a pointer and an int object each): most of a hash-id request's memory
    ids = listed if packed is None else packed
    want = -(-n_in // tb)
    if len(ids) != want:
        raise ctx.err("hash_ids", f"has {len(ids)} ids but input_length {n_in} needs "
                                  f"ceil({n_in}/{tb}) = {want}")
    return TraceRequest(index=index, line=ctx.line, id=rid,
                        arrival_ms=_timestamp(obj, ctx, ts_scale),
                        arrival_step=_arrival_step(obj, ctx),
                        prompt_len=n_in, output_len=n_out, hash_ids=ids, trace_block_size=tb,
                        priority=_priority(obj, ctx))


# The field that makes each format, first match wins (`detect`). A line of one format in a trace
# of another was read by the first request's rules, its own fields ignored (a lengths first line
# and later hash_ids: every hit lost without a word): `_same_format` refuses it.
_MARKS = (("prompt_token_ids", "tokens"), ("chat_id", "bailian"), ("hash_ids", "mooncake"),
          ("input_length", "lengths"))


def _same_format(obj: dict, ctx: _Ctx, fmt: str) -> None:
    """No field of a format that `detect` ranks before `fmt` (which would have made it that)."""
    for field, other in _MARKS:
        if other == fmt:
            return
        if field in obj:
            raise ctx.err(field, f"a field of the {other} format, but the trace's first "
                                 f"request made it a {fmt} trace (one format a trace)")


def parse_mooncake(obj: dict, ctx: _Ctx, index: int) -> TraceRequest:
    _same_format(obj, ctx, "mooncake")
    return _hashed(obj, ctx, index, tb=MOONCAKE_BLOCK, ts_scale=1.0, rid=_rid(obj, ctx, index))


def parse_bailian(obj: dict, ctx: _Ctx, index: int) -> TraceRequest:
    _same_format(obj, ctx, "bailian")
    if obj.get("chat_id") is None:
        raise ctx.err("chat_id", "missing")
    # A chat id names a conversation turn; keep ids unique by suffixing the line's index.
    rid = f"{_rid(obj, ctx, index, 'chat_id')}-{index}"
    return _hashed(obj, ctx, index, tb=BAILIAN_BLOCK, ts_scale=1000.0, rid=rid)


def parse_tokens(obj: dict, ctx: _Ctx, index: int) -> TraceRequest:
    prompt, prompt_array = _ids(obj, "prompt_token_ids", ctx)
    if not prompt:
        raise ctx.err("prompt_token_ids", "is empty (vLLM rejects an empty prompt)")
    _check_ids(prompt, "prompt_token_ids", ctx)
    out_ids = None
    if obj.get("output_token_ids") is not None:
        out_ids = _int_list(obj, "output_token_ids", ctx)
        _check_ids(out_ids, "output_token_ids", ctx)
        n_out = _tokens(obj, "output_length", ctx, default=len(out_ids))
        if n_out != len(out_ids):
            raise ctx.err("output_length", f"is {n_out} but output_token_ids has {len(out_ids)}")
    else:
        n_out = _tokens(obj, "output_length", ctx)
    rid = _rid(obj, ctx, ctx.line)
    salt = _name(obj, "cache_salt", ctx)
    if salt == "":
        # (vLLM's API refuses it; read as no salt, it shared every unsalted prefix unsaid)
        raise ctx.err("cache_salt", "is empty (vLLM refuses an empty cache_salt: leave it out)")
    lora = _name(obj, "lora", ctx)
    return TraceRequest(index=index, line=ctx.line, id=rid, arrival_ms=_timestamp(obj, ctx),
                        arrival_step=_arrival_step(obj, ctx),
                        prompt_len=len(prompt), output_len=n_out, prompt_token_ids=prompt,
                        prompt_array=prompt_array, output_token_ids=out_ids,
                        priority=_priority(obj, ctx),
                        cache_salt=salt, lora=lora)


def _unique(ctx: _Ctx, index: int, rid: str, n_in: int, n_out: int, t_ms: float,
            step: int = 0) -> TraceRequest:
    nb = -(-n_in // UNIQUE_BLOCK)
    ids = _array("Q", range(ctx.next_unique_id, ctx.next_unique_id + nb))
    ctx.next_unique_id += nb
    return TraceRequest(index=index, line=ctx.line, id=rid, arrival_ms=t_ms, arrival_step=step,
                        prompt_len=n_in, output_len=n_out, hash_ids=ids,
                        trace_block_size=UNIQUE_BLOCK)


def parse_lengths(obj: dict, ctx: _Ctx, index: int) -> TraceRequest:
    _same_format(obj, ctx, "lengths")
    return _unique(ctx, index, _rid(obj, ctx, index), _tokens(obj, "input_length", ctx),
                   _tokens(obj, "output_length", ctx), _timestamp(obj, ctx),
                   _arrival_step(obj, ctx))


PARSERS: dict[str, Callable[[dict, _Ctx, int], TraceRequest]] = {
    "mooncake": parse_mooncake,
    "bailian": parse_bailian,
    "tokens": parse_tokens,
    "lengths": parse_lengths,
}


def detect(obj: dict) -> str:
    """The format of a request object, from its fields."""
    for field, fmt in _MARKS:
        if field in obj:
            return fmt
    raise ValueError("unknown trace format: expected hash_ids (Mooncake), chat_id (Bailian), "
                     "prompt_token_ids (token ids) or input_length")
