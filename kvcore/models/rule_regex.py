"""The regexes a quantization config writes (GPTQ's ``dynamic`` keys, compressed-tensors'
``re:`` targets and ignore entries), compiled once when the config is read. vLLM 0.33 passes
them to re.match unchecked: a pattern that is no regex ends its start in re.error (kvcli said
so with a traceback), and one that nests a repeat in a repeat ("(a+)+$") backtracks for hours
against a module path it nearly matches, where vLLM hangs at start-up (kvcli hung). Both are
refused here, naming the config's field.

The nested repeat is refused when the outer repeat's body holds an unbounded repeat and no
character at its own level that every repeat inside cannot match (the separator that makes
"(\\d+\\.)*" safe: each round must end at a dot the digits cannot take). This is a test of the
pattern's shape, not a proof: a pattern it passes may still be slow ("(a|aa)+"), and the
module paths matched are short (tens of characters), which bounds what a linear pattern costs.
"""

from __future__ import annotations

import re
from importlib import import_module
from typing import Any

from kvcore.errors import InputError

# (re's own parser and compiler: the parse tree is what tells a nested repeat; no stub types)
_parser: Any = import_module("re._parser")
_compiler: Any = import_module("re._compiler")
_c: Any = import_module("re._constants")
_REPEATS = (_c.MAX_REPEAT, _c.MIN_REPEAT)
_ONE_CHAR = (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN, _c.CATEGORY)
NESTED = ("repeats a group that itself repeats (as \"(a+)+\" does): matching it can take "
          "exponential time, and vLLM's re.match hangs on a module path it nearly matches; "
          "write it without the nested repeat")


def user_regex(text: str, written: str, source: str, field: str) -> re.Pattern[str]:
    """`text` compiled; InputError naming `field` of `source` where it is no regex or nests an
    unbounded repeat without a separator (the message quotes the config's `written` entry:
    GPTQ's ``rule '+:...'``, compressed-tensors' ``'re:...'``)."""
    try:
        pattern = re.compile(text)
    except re.error as e:
        raise InputError(f"{written} is not a regular expression ({e})", path=source or None,
                         field=field) from None
    if _nested(_parser.parse(text)):
        raise InputError(f"{written} {NESTED}", path=source or None, field=field)
    return pattern


def _children(op: Any, av: Any) -> list[Any]:
    """The sub-patterns under one parse item."""
    if op is _c.SUBPATTERN:
        return [av[3]]
    if op is _c.BRANCH:
        return list(av[1])
    if op in (_c.ASSERT, _c.ASSERT_NOT):
        return [av[1]]
    if op is _c.ATOMIC_GROUP:
        return [av]
    if op is _c.GROUPREF_EXISTS:
        return [p for p in av[1:] if p is not None]
    return []


def _nested(items: Any) -> bool:
    for op, av in items:
        if op in _REPEATS:
            if av[1] > 1 and _ambiguous(av[2]):
                return True
            if _nested(av[2]):
                return True
        elif any(_nested(sub) for sub in _children(op, av)):
            return True
    return False


def _inner_repeats(items: Any) -> list[Any]:
    """The unbounded repeats anywhere under `items` (as (op, av) pairs)."""
    found: list[Any] = []
    for op, av in items:
        if op in _REPEATS:
            if av[1] > 1:
                found.append(av[2])
            found += _inner_repeats(av[2])
        else:
            for sub in _children(op, av):
                found += _inner_repeats(sub)
    return found


def _ambiguous(body: Any) -> bool:
    """Whether a repeated `body` can split one string into rounds in many ways."""
    while len(body) == 1 and body[0][0] is _c.SUBPATTERN:
        body = body[0][1][3]    # (a capturing group's items: "(\d+\.)*")
    inner = _inner_repeats(body)
    if not inner:
        return False
    separators = [chr(av) for op, av in body if op is _c.LITERAL]
    return not any(all(_cannot_take(rep, ch) for rep in inner) for ch in separators)


def _cannot_take(repeated: Any, ch: str) -> bool:
    """Whether a repeat of `repeated` (one character class) never matches `ch`."""
    if len(repeated) != 1 or repeated[0][0] not in _ONE_CHAR:
        return False
    one = _parser.SubPattern(repeated.state, [repeated[0]])
    return _compiler.compile(one).fullmatch(ch) is None
