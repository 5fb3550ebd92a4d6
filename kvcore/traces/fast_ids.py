"""`cut_prompt`: a token-id trace line read with its prompt ids parsed in C (compiled build).

The reader's JSON path reads a line with orjson (a Python int per token id), then copies the
ids into an `array("Q")` and checks them for bools. `cut_prompt` finds the line's
`"prompt_token_ids"` member, reads its list with `native_ids.parse_ids` (digits to the array,
no int objects), and lets orjson read the rest of the line with `[]` in the list's place; the
ids then go in as one `array.tolist()`. The dict is the one the JSON path makes, and so is the
array. It gives up, and the JSON path reads the line as before, wherever the two could
differ: no such member, or the key twice, escaped, nested, or not where a member starts, a list
`parse_ids` does not take, a line the rest of which orjson refuses (the JSON path then names
the error with its true position). `parse_ids` takes 9-11 ns an id where orjson and the
array took 27-43 (lines of 1,400 ids); `benchmarks/sched_vs_vllm.py --requests 2000`, compiled,
whole process: 4.73 -> 4.37 G instructions (callgrind), the step lines the same.
"""

from __future__ import annotations

from array import array
from typing import Any

import orjson

KEY = '"prompt_token_ids"'
_WS = " \t\r\n"
_parse: Any = False         # native_ids.parse_ids once looked up; None: no compiled build


def available() -> bool:
    """Whether the native reader is built (and the compiled build in use)."""
    global _parse
    if _parse is False:
        from kvcore import compiled
        mod = compiled.native("kvcore.traces.native_ids")
        _parse = None if mod is None else mod.parse_ids
    return _parse is not None


def cut_prompt(text: str, limit: int) -> tuple[dict, array] | None:
    """The line's object and its prompt ids as ``array("Q")`` (at most ``limit`` of them), or
    None: read the line with the JSON path. Call `available()` first."""
    i = text.find(KEY)
    if i < 0:
        return None
    # The key's quote must start a member of an object: after "{" or "," (a quote inside a
    # string is escaped, after a backslash; the closing quote of a string is followed by
    # what no JSON allows, which orjson then refuses below).
    j = i - 1
    while j >= 0 and text[j] in _WS:
        j -= 1
    if j < 0 or text[j] not in "{,":
        return None
    n = len(text)
    k = i + len(KEY)
    while k < n and text[k] in _WS:
        k += 1
    if k >= n or text[k] != ":":
        return None
    k += 1
    while k < n and text[k] in _WS:
        k += 1
    if k >= n or text[k] != "[":
        return None
    got = _parse(text, k + 1, limit)
    if got is None:
        return None
    ids, end = got
    if text.find(KEY, end) >= 0:          # a second one: which one counts is orjson's to say
        return None
    try:
        obj = orjson.loads(text[:k + 1] + text[end - 1:])      # the list as "[]"
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict:
        return None
    v = obj.get("prompt_token_ids")
    if type(v) is not list or v:          # not the object's own member (nested, or escaped)
        return None
    obj["prompt_token_ids"] = ids.tolist()
    return obj, ids
