"""A request's names as a trace line gives them: its id (or Bailian's `chat_id`), its
`cache_salt` and `lora`; each a string or an integer. Any other JSON value was turned into
Python's spelling of it (`true` became "True", `[1]` "[1]"), which no line holds."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvcore.traces.line_values import _Ctx


def request_id(obj: dict, ctx: _Ctx, default: int, key: str = "id") -> str:
    """The request's id (or Bailian's `chat_id`): a string or an integer (`true` and `[1]`
    became "True" and "[1]"), else its place in the trace."""
    rid = name_field(obj, key, ctx)
    return str(default) if rid is None else rid


def name_field(obj: dict, key: str, ctx: _Ctx) -> str | None:
    """A `cache_salt` or `lora` name: a string or an integer, None when absent (`true`, `1.5`
    and `{"a": 1}` became the salts "True", "1.5" and "{'a': 1}": Python's spelling, not the
    line's; two JSON-equal objects could differ by key order)."""
    v = obj.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise ctx.err(key, f"must be a string or an integer, got {json.dumps(v)[:40]}")
    return str(v)
