"""What each event kind's fields hold (docs/events.md), to name the field of an edited stream.

The values the stats use are checked as they enter, cheaply (`stats/entry_checks.py`); what a
sink still trips over (a TypeError, an IndexError, ...) `misfit` words: it looks at that one
event and names the first field that does not hold what the schema says, so that the error is
"field 'hashes': 2 entries for 3 blocks" and not Python's "list index out of range".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Check = Callable[[Any, dict], "str | None"]


class FieldWorded(ValueError):
    """A sink's own words for a field's value (`stats.per_block.check_ids`: "'blocks' holds 99,
    not a block id (0..9)"): the reader keeps them rather than ask `misfit`, and names
    ``field``."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def shown(v: Any) -> str:
    """The value as the stream spells it (null, true), cut short."""
    text = json.dumps(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _count(v: Any, ev: dict) -> str | None:
    return None if _is_int(v) and v >= 0 else f"must be a whole number >= 0, got {shown(v)}"


def flag_problem(v: Any, ev: dict) -> str | None:
    return None if isinstance(v, bool) else f"must be true or false, got {shown(v)}"


def text_or_null_problem(v: Any, ev: dict) -> str | None:
    return None if v is None or isinstance(v, str) else f"must be a string or null, got {shown(v)}"


def _group(v: Any, ev: dict) -> str | None:
    return None if v is None or _is_int(v) else f"must be a group index or null, got {shown(v)}"


def _ms(v: Any, ev: dict) -> str | None:
    ok = v is None or (isinstance(v, int | float) and not isinstance(v, bool))
    return None if ok else f"must be a number of ms or null, got {shown(v)}"


def time_problem(v: Any, ev: dict) -> str | None:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v < float("inf")
    return None if ok else f"must be a time in ms (a number >= 0), got {shown(v)}"


_NONE_BAD = object()


def _ints(v: Any, ev: dict) -> str | None:
    if not isinstance(v, list):
        return f"must be a list of whole numbers, got {shown(v)}"
    # (a sentinel: a null element was taken for "none bad")
    bad = next((x for x in v if not _is_int(x) or x < 0), _NONE_BAD)
    return None if bad is _NONE_BAD else f"must hold whole numbers >= 0, holds {shown(bad)}"


def _one_each(of: str, what: str, per: str) -> Check:
    """Whole numbers, one per entry of the event's field `of`: a block's ``hashes``, a CPU tier
    event's ``groups`` (each key's KV cache group)."""
    def check(v: Any, ev: dict) -> str | None:
        problem = _ints(v, ev)
        other = ev.get(of)
        if problem is None and isinstance(other, list) and len(v) != len(other):
            problem = f"{len(v)} {what} for {len(other)} {per}"
        return problem
    return check


_hashes = _one_each("blocks", "hashes", "blocks")
_key_groups = _one_each("keys", "groups", "keys")


def _per_group(v: Any, ev: dict) -> str | None:
    if not isinstance(v, list):
        return f"must be a list (one list per group), got {shown(v)}"
    for i, inner in enumerate(v):
        # (null: a group whose block is coarser than the hash block, docs/events.md; every
        # error in such a stream's `admit` named this field's null)
        problem = None if inner is None else _ints(inner, ev)
        if problem is not None:
            return f"[{i}] {problem}"
    return None


def _chain_tokens(v: Any, ev: dict) -> str | None:
    """The chain's first tokens: one per hash, or one more (a partial tail, or EAGLE's
    lookahead: no hash for a prompt's last hash block)."""
    problem = _ints(v, ev)
    hashes = ev.get("chain_hashes")
    if problem is None and isinstance(hashes, list) and len(v) - len(hashes) not in (0, 1):
        problem = f"{len(v)} first tokens for {len(hashes)} chain_hashes"
    return problem


_BLOCKS = (("blocks", _ints), ("hashes", _hashes))
_KEYS = (("keys", _ints), ("groups", _key_groups))   # (`groups`: a tier of several groups)
SCHEMA: dict[str, tuple[tuple[str, Check], ...]] = {
    "arrive": (("prompt_tokens", _count), ("output_tokens", _count)),
    "admit": (("prompt_tokens", _count), ("hit_tokens", _count), ("resumed", flag_problem),
              ("counted", flag_problem), ("prompt_hashes", _per_group), ("hash_domain", text_or_null_problem),
              ("first_tokens", _per_group), ("content_hashes", _per_group),
              ("chain_hashes", _ints), ("chain_first_tokens", _chain_tokens),
              ("chain_content_hashes", _ints)),
    "touch": _BLOCKS,
    "cache": _BLOCKS,
    "evict": _BLOCKS,
    "allocate": (("blocks", _ints),),
    "free": (("blocks", _ints), ("freed", _ints), ("evictable", _ints)),
    "preempt": (("num_computed_tokens", _count),),
    "finish": (("output_tokens", _count), ("ttft_ms", _ms), ("tpot_ms", _ms), ("e2e_ms", _ms),
               ("queue_ms", _ms)),
    "reject": (("reason", text_or_null_problem),),
    "end": (("t_ms", time_problem),),      # the stats' sim_time_ms
    "offload_load": (("job", _count), *_KEYS, ("gpu_blocks", _count), ("sync", flag_problem)),
    "offload_store": (("job", _count), *_KEYS, ("gpu_blocks", _count)),
    "offload_done": (("job", _count), ("store", flag_problem)),
    "offload_evict": _KEYS,
    "offload_offer_failed": (("offered", _count),),
}
_COMMON: tuple[tuple[str, Check], ...] = (("req", text_or_null_problem), ("group", _group))


def misfit(ev: Any) -> tuple[str, str] | None:
    """The first field of ``ev`` (present) that does not hold what its kind's schema says, and
    what is wrong with it; None when every field fits (the sink's own words stand then)."""
    if not isinstance(ev, dict):
        return None
    kind = ev.get("kind")
    for name, check in _COMMON + (SCHEMA.get(kind, ()) if isinstance(kind, str) else ()):
        if name in ev:
            problem = check(ev[name], ev)
            if problem is not None:
                return name, problem
    return None
