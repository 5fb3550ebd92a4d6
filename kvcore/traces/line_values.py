"""One field's value of a trace line, read and checked: an integer, a token count, a list of
ids, a number, a priority. Each raises `InputError` naming the file, the line and the field
(`_Ctx.err`); the parsers of `formats.py` are made of them."""

from __future__ import annotations

from array import array as _array
from datetime import datetime
from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.traces.limits import MAX_REQUEST_TOKENS


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
        # Whether the first request has a timestamp, and its line: every request has one or none
        # does (`arrival_fields.same_timing`)
        self.timed: bool | None = None
        self.timed_line = 0

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
            # the JSON reader takes an integer past 2^64 - 1 as a float: 'got
            # 1.8446744073709552e+19' did not look like what the line holds
            raise ctx.err(key, f"must hold integers below 2^64, got {x:.6g} (an integer this "
                          "large reads as a float)")
        if isinstance(x, bool) or not isinstance(x, int) or x < 0:
            raise ctx.err(key, f"must hold non-negative integers, got {clipped(x)}")
    return v, arr
