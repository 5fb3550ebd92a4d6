"""vLLM's dotted spelling of a JSON option: `--limit-mm-per-prompt.image 0`,
`--limit-mm-per-prompt.image=0`, `--limit-mm-per-prompt.image.count=0`.

vLLM's FlexibleArgumentParser (utils/argparse_utils.py) merges every dotted key of an option
into one JSON object (a value read as JSON, else as a human-readable integer such as 1k, else
as text) and passes it after the rest of the line, so that it replaces a whole JSON value given
too. Click has no such spelling: `kvcli.app.main` joins them the same way before typer reads
the line (`join_dotted`).
"""

from __future__ import annotations

import json
import re
from typing import Any

DOTTED = ("--limit-mm-per-prompt",)
_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


def _value(text: str) -> Any:
    """vLLM's reading of a dotted key's value."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    m = _HUMAN.fullmatch(text.strip())
    if m is not None:
        number, suffix = m.groups()
        if suffix.islower():
            return int(float(number) * 10 ** (3 * "kmgt".index(suffix) + 3))
        if number.isdigit():
            return int(number) * 2 ** (10 * "KMGT".index(suffix) + 10)
    return text


def join_dotted(argv: list[str]) -> list[str]:
    """`argv` with each DOTTED option's dotted keys joined into one JSON value, given last."""
    out: list[str] = []
    joined: dict[str, dict[str, Any]] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out += argv[i:]
            break
        # (vLLM reads underscores as dashes in the name, up to the first dot)
        head, dot, rest = arg.partition(".")
        name = head.replace("_", "-") if head.startswith("--") else head
        key, eq, text = rest.partition("=")
        if not dot or name not in DOTTED or not all(key.split(".")) or (
                not eq and i + 1 >= len(argv)):
            out.append(arg)         # (click names what it cannot read)
            i += 1
            continue
        if not eq:
            text = argv[i + 1]
        i += 1 if eq else 2
        *path, last = key.split(".")
        node = joined.setdefault(name, {})
        for part in path:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[last] = _value(text)
    for name, obj in joined.items():
        out += [name, json.dumps(obj)]
    return out
