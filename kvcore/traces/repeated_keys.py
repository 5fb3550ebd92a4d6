"""A trace line with a key given twice (`{"timestamp": 50, ..., "timestamp": 1}`): the JSON
reader keeps the last without a word, so the request replayed at 1 ms, or with the second of two
`input_length`s, and nothing said the line was ambiguous. Such a line is refused, naming the key.

The check costs a count, not a parse (0.9 us on a 680-byte line orjson reads in 2.9, less than
the reader's search for `true`): each member of a line written as JSON writers write it has `":`
right after its key, so a line whose count of `":` is its object's number of keys repeats none.
Any other line (a nested object, a string holding `":`, keys spaced from their colons) is read
again by Python's decoder with a hook that sees every member of every object: a key twice in a
nested one (the config line's options) is refused too, deeper ones named by their key alone.
What the count lets through is a line where as many keys are spaced from their colons as keys
are repeated: made to, not written by a JSON writer.
"""

from __future__ import annotations

import json

from kvcore.errors import InputError


def check(text: str, obj: dict, path: str, line: int) -> None:
    """`InputError` at `line` when the top-level object of `text` (decoded as `obj`) gives a key
    twice."""
    if text.count('":') == len(obj):
        return
    twice: dict[int, str] = {}      # id of a decoded object -> its first repeated key

    def keep(pairs: list) -> dict:
        obj = dict(pairs)
        if len(obj) < len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    twice[id(obj)] = key
                    break
                seen.add(key)
        return obj

    try:
        top = json.loads(text, object_pairs_hook=keep)
    except (ValueError, RecursionError):
        return      # (orjson took it; Python's decoder differs only past its limits)
    if not twice:
        return
    # the top-level object's own key, or one of a member's object (the config line's options)
    field = twice.get(id(top)) or next((f"{k}.{twice[id(v)]}" for k, v in top.items()
                                        if id(v) in twice), None) or next(iter(twice.values()))
    raise InputError(f"key {field.rsplit('.', 1)[-1]!r} is given twice in one object (JSON "
                     "readers keep the last without a word): give it once", path=path,
                     line=line, field=field)
