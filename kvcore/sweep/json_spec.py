"""A JSON sweep spec read as TOML reads one: a key given twice in one object is refused (Python's
`json` keeps the last without a word), naming the line of the repeat and the key's full name
(``options.num_blocks``, as other errors name it).

The line comes from the text itself: the decoder notes where each object it is parsing starts,
and the repeat is the second time the key is written at that object's own depth (a last match
anywhere in the file named another object's key: an `options` key repeated above a `grid` one of
the same name was blamed on the grid's line).
"""

from __future__ import annotations

import itertools
import json
import json.scanner
from json.decoder import scanstring  # type: ignore[attr-defined]  # (typeshed omits it)
from typing import Any

from kvcore.errors import InputError


class _Repeated(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise _Repeated(key)
        doc[key] = value
    return doc


class _Decoder(json.JSONDecoder):
    """`json`'s decoder with the pure-Python scanner, its object parser noting where each
    object being parsed starts (just after its ``{``)."""

    def __init__(self) -> None:
        super().__init__(object_pairs_hook=_once)
        self.starts: list[int] = []
        inner = self.parse_object  # type: ignore[has-type]

        def parse_object(s_and_end: tuple[str, int], *args: Any) -> Any:
            self.starts.append(s_and_end[1])
            result = inner(s_and_end, *args)
            self.starts.pop()
            return result

        self.parse_object = parse_object
        self.scan_once = json.scanner.py_make_scanner(self)  # type: ignore[attr-defined]


def loads_spec(text: str, path: str) -> Any:
    """The spec's document; an `InputError` at a key given twice. JSON's own errors pass."""
    decoder = _Decoder()
    try:
        return decoder.decode(text)
    except _Repeated as err:
        starts = decoder.starts
        at = _own_keys(text, starts[-1], err.key)
        line = text.count("\n", 0, at[1]) + 1 if len(at) > 1 else None
        names = [_key_of(text, outer, inner - 1) for outer, inner in itertools.pairwise(starts)]
        field = ".".join([*(n for n in names if n is not None), err.key])
        raise InputError(f"key {err.key!r} is given twice in one object (JSON would keep the "
                         "last without a word): give it once", path=path, line=line,
                         field=field) from None


def _walk(text: str, start: int) -> Any:
    """(position, depth, key) for each key of the object starting at `start` and each ``{`` or
    ``[`` in it (key None), depth 1 being the object's own."""
    depth, i, n = 1, start, len(text)
    while i < n and depth > 0:
        c = text[i]
        if c == '"':
            value, end = scanstring(text, i + 1)
            if text[end:].lstrip().startswith(":"):
                yield i, depth, value
            i = end
            continue
        if c in "{[":
            yield i, depth, None
            depth += 1
        elif c in "}]":
            depth -= 1
        i += 1


def _own_keys(text: str, start: int, key: str) -> list[int]:
    """Where `key` is written as a key of the object itself (not of one nested in it)."""
    return [i for i, depth, k in _walk(text, start) if depth == 1 and k == key]


def _key_of(text: str, start: int, brace: int) -> str | None:
    """The key whose value is the object opening at `brace`, in the object at `start`."""
    last = None
    for i, depth, k in _walk(text, start):
        if depth == 1 and k is not None:
            last = k
        elif k is None and i == brace:
            return last if depth == 1 else None
    return None
