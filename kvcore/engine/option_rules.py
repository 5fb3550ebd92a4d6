"""The rules a `ReplayOptions` field's value is checked by (`check_value`): its metadata's
`choices`, or its `check` ("utilization", "retention", "name", "groups", "eagle_groups",
"mm_limits",
"positive_int", "fraction", "positive", "int_at_least" / "at_least" with `lo` and `hi`, `pool`).
Every integer stays below 2**63, the JSON writer's range."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from kvcore.errors import InputError, clipped, clipped_int, floated_integer, path_label, shown_value
from kvcore.host_memory import check_pool_fits
from kvcore.sizing.option_ranges import check_int_at_least, check_positive_int
from kvcore.vllm_values import kv_cache_dtype


def check_value(f: dataclasses.Field, v: Any) -> None:
    """Raise `InputError` naming ``f`` when ``v`` breaks the field's `choices` or `check`
    rule (its metadata, `options._knob`)."""
    meta = f.metadata
    if meta["choices"] is not None:
        if f.name == "kv_cache_dtype" and isinstance(v, str):
            kv_cache_dtype(v)       # a vLLM dtype kvcli does not model: refused, saying why
        if v not in meta["choices"]:
            if meta["message"]:
                raise InputError(f"{meta['message']} {clipped(v)}", field=f.name)
            *head, last = meta["choices"]
            raise InputError(f"must be {', '.join(head)} or {last}, got {clipped(v)}", field=f.name)
        return
    check = meta["check"]
    if f.type == "bool" and not isinstance(v, bool):     # a config line's "yes" is no switch
        raise InputError(f"must be true or false, got {v!r}", field=f.name)
    if check is None or (v is None and f.default is None):
        return
    if _is_number(v, (int,)) and not -(1 << 63) <= v < 1 << 63:    # (the JSON writer's range)
        raise InputError(f"must be a 64-bit integer (below 2**63 in size), got {clipped_int(v)}",
                         field=f.name)
    if check in ("positive_int", "int_at_least") and floated_integer(v):
        # (a line's 2**70, which orjson reads as a float: 'got 1.1805916207174113e+21')
        raise InputError(f"must be a 64-bit integer (below 2**63 in size), got {shown_value(v)}",
                         field=f.name)
    if check == "utilization":      # vLLM's rule: 0 < x <= 1
        if not _is_number(v, (int, float)) or not 0 < v <= 1:
            raise InputError(f"must be in (0, 1], got {v!r}", field=f.name)
        return
    if check == "retention":
        if v is not None and (not _is_number(v, (int,)) or v < 0):
            raise InputError(f"must be dense (null) or an integer >= 0, got {v!r}",
                             field=f.name)
        return
    if check == "name":
        # '' (an unset shell variable) was read as "none given" and the run went on without it
        if not isinstance(v, str) or not v.strip():
            raise InputError(f"must be a non-empty name or path, got {v!r}", field=f.name)
        if f.name == "hash_seed":
            check_seed(v)
        return
    if check == "groups":
        _check_groups(v)
        return
    if check == "mm_limits":        # vLLM's --limit-mm-per-prompt JSON (kvcore.mm_options)
        from kvcore.mm_options import parse_limits

        if not isinstance(v, str):
            raise InputError(f"must be a JSON object as text, got {clipped(v)}", field=f.name)
        parse_limits(v)
        return
    if check == "eagle_groups":
        if not (isinstance(v, (list, tuple)) and v and len(set(v)) == len(v)
                and all(_is_number(i, (int,)) and i >= 0 for i in v)):
            raise InputError(f"must be a non-empty list of distinct group indices (0, 1, ...), "
                             f"got {clipped(v)}", field=f.name)
        return
    if check == "positive_int":
        check_positive_int(v, f.name)
    elif check == "fraction":       # (a config line's "0.01" was a TypeError traceback)
        if not _is_number(v, (int, float)) or not 0.0 <= v < 1.0:      # also refuses NaN
            raise InputError(f"must be in [0, 1), got {v}", field=f.name)
    elif check == "positive":
        if not _is_number(v, (int, float)) or not math.isfinite(v) or not v > 0:
            raise InputError(f"must be a finite number > 0, got {v!r}", field=f.name)
    else:
        if check == "int_at_least":
            check_int_at_least(v, meta["lo"], f.name, meta["message"])
        elif not _is_number(v, (int, float)) or not v >= meta["lo"]:  # and NaN
            head = meta["message"] or f"must be >= {meta['lo']:g}"
            raise InputError(f"{head}, got {v!r}", field=f.name)
        if not math.isfinite(v):    # an int always is; inf would make the clock spin forever
            raise InputError(f"must be a finite number, got {v!r}", field=f.name)
        if meta["hi"] is not None and v > meta["hi"]:
            raise InputError(f"must be at most {meta['hi']:,.0f}, got {v!r}", field=f.name)
        if meta["pool"]:
            check_pool_fits(v, field=f.name)


def check_seed(seed: str) -> None:
    """A NONE_HASH seed must be text: a command line's non-UTF-8 byte (held as a surrogate)
    ended in a UnicodeEncodeError traceback from the cbor hashes or the JSON writer, and
    Python refuses such a PYTHONHASHSEED, so no vLLM ran with it."""
    if not seed.strip():        # (`kvcli script --hash-seed ''` took it; replay refuses it)
        raise InputError(f"must be a non-empty name or path, got {seed!r}", field="hash_seed")
    try:
        seed.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"must be UTF-8 text, got '{path_label(seed)}'",
                         field="hash_seed") from None


def _check_groups(groups: Any) -> None:
    """A non-empty list of group objects each `spec_from_group_config` builds."""
    from kvcore.managers.registry import spec_from_group_config

    if not isinstance(groups, (list, tuple)) or not groups:
        raise InputError("must be a non-empty list of groups", field="groups")
    for g in groups:
        try:
            spec = spec_from_group_config(g, 16)
        except ValueError as err:
            raise InputError(str(err), field="groups") from None
        if spec.kind not in ("full", "mla", "sliding_window", "chunked_local", "mamba",
                             "circular_buffer", "rswa"):
            raise InputError(f"group type {g.get('type')!r} is not modelled at the scheduler "
                             "level (full, mla, sliding_window, chunked_local, mamba, "
                             "circular_buffer and rswa are)", field="groups")


def _is_number(v: Any, types: tuple[type, ...]) -> bool:
    return isinstance(v, types) and not isinstance(v, bool)
