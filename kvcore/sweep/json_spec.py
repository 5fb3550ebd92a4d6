"""A JSON sweep spec read as TOML reads one: a key given twice in one object is refused (Python's
`json` keeps the last without a word), naming the line of the repeat and the key's full name
(``options.num_blocks``, as other errors name it).

A spec is read by `json`'s C decoder. Only when it finds a repeat is the text read again by the
pure-Python decoder, which notes where each object it is parsing starts: the repeat is the
second time the key is written at that object's own depth (a last match anywhere in the file
named another object's key: an `options` key repeated above a `grid` one of the same name was
blamed on the grid's line), and its name runs through the objects and lists above it
(``grid.groups[1][0].sliding_window``).
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
    try:
        # (the C decoder: 10x faster than the pure-Python one on a large spec, and nested
        # deeper; the pure-Python one is run only to place a repeat)
        return json.loads(text, object_pairs_hook=_once)
    except _Repeated:
        pass
    decoder = _Decoder()
    try:
        return decoder.decode(text)
    except _Repeated as err:
        starts = decoder.starts
        at = _own_keys(text, starts[-1], err.key)
        line = text.count("\n", 0, at[1]) + 1 if len(at) > 1 else None
        names = [_path_to(text, outer, inner - 1) for outer, inner in itertools.pairwise(starts)]
        field = ".".join([*(n for n in names if n), err.key])
        raise InputError(f"key {err.key!r} is given twice in one object (JSON would keep the "
                         "last without a word): give it once", path=path, line=line,
                         field=field) from None


def _own_keys(text: str, start: int, key: str) -> list[int]:
    """Where `key` is written as a key of the object starting at `start` (just after its
    ``{``), not as a key of one nested in it."""
    out, depth, i = [], 1, start
    while i < len(text) and depth > 0:
        c = text[i]
        if c == '"':
            value, end = scanstring(text, i + 1)
            if depth == 1 and value == key and text[end:].lstrip().startswith(":"):
                out.append(i)
            i = end
            continue
        depth += (c in "{[") - (c in "}]")
        i += 1
    return out


def _path_to(text: str, start: int, target: int) -> str | None:
    """The path (``groups[1][0]``) from the object starting at `start` to the value opening
    at `target`; None when it is not inside it."""
    frames: list[list[Any]] = [["{", None]]         # (bracket, key or index) per level
    i = start
    while i < len(text) and frames:
        c = text[i]
        if c == '"':
            value, end = scanstring(text, i + 1)
            if frames[-1][0] == "{" and text[end:].lstrip().startswith(":"):
                frames[-1][1] = value
            i = end
            continue
        if c in "{[":
            if i == target:
                return "".join(f"[{x}]" if b == "[" else f".{x}" for b, x in frames)[1:]
            frames.append([c, 0 if c == "[" else None])
        elif c in "}]":
            frames.pop()
        elif c == "," and frames[-1][0] == "[":
            frames[-1][1] += 1
        i += 1
    return None
