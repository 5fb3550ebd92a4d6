"""The trace formats, detected from the fields of the first request (`detect`).

| format   | fields                                                                 | block ids      |
|----------|------------------------------------------------------------------------|----------------|
| mooncake | timestamp (ms), input_length, output_length, hash_ids[, block_size]    | 512 tokens     |
| bailian  | chat_id, parent_chat_id, timestamp (s), turn, type, input_length, ... | 16 tokens      |
| tokens   | prompt_token_ids, output_length | output_token_ids, [id, timestamp (ms), arrival_step, priority, cache_salt, lora] | - |
| lengths  | input_length, output_length[, timestamp (ms)]: every prompt unique    | -              |
| azure    | CSV TIMESTAMP,ContextTokens,GeneratedTokens: every prompt unique       | -              |

Each parser turns one decoded object into a `TraceRequest` or raises `InputError` naming the field
(the Azure CSV rows: `azure_csv.py`), from the readers of one field's value (`line_values.py`)
and of its arrival (`arrival_fields.py`), within the limits of `limits.py` (importable here too).
"""

from __future__ import annotations

from array import array as _array
from collections.abc import Callable

from kvcore.traces.arrival_fields import _arrival_step, _timestamp
from kvcore.traces.limits import MAX_ARRIVAL_STEP, MAX_REQUEST_TOKENS, MAX_TIMESTAMP_MS
from kvcore.traces.line_values import _check_ids, _Ctx, _ids, _int, _int_list, _priority, _tokens
from kvcore.traces.names import name_field as _name
from kvcore.traces.names import request_id as _rid
from kvcore.traces.request import TraceRequest

# (the limits are imported from here too, where they lived before `limits.py`)
__all__ = ["BAILIAN_BLOCK", "CONTENTLESS_FORMATS", "MAX_ARRIVAL_STEP", "MAX_REQUEST_TOKENS",
           "MAX_TIMESTAMP_MS", "MOONCAKE_BLOCK", "PARSERS", "UNIQUE_BLOCK", "detect",
           "parse_bailian", "parse_lengths", "parse_mooncake", "parse_tokens"]

MOONCAKE_BLOCK = 512
BAILIAN_BLOCK = 16
# Prompts with no content (lengths, azure) get fresh trace block ids of this size from a counter,
# so every prompt is unique content.
UNIQUE_BLOCK = 512
# Prompt lengths only: hit rate 0 by construction, which a summary says (`prompt_content`)
CONTENTLESS_FORMATS = frozenset({"lengths", "azure"})


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
