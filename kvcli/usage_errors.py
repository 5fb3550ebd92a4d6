"""typer's usage errors in kvcli's words: one line, `option --x: ...` or `argument NAME: ...`
as every other input error (`kvcli.output.describe`), and the command whose `-h` helps.

typer (with pydantic) says "Invalid value for 'kind': Value error, 'foo' is not one of ...",
"Option '--gpu' requires an argument." or, over four lines, "Missing argument 'kind'. Choose
from: ...". A message no rule here knows is kept, on one line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"Invalid value for '(?P<name>[^']+(?:' / '[^']+)*)': (?:Value error, )?"
                r"(?P<what>.*?)\.?", re.DOTALL), "{where}: {what}"),
    (re.compile(r"Option '(?P<name>[^']+)' does not take a value\.?"), "{where}: takes no value"),
    (re.compile(r"Got unexpected extra argument(?:s|\(s\))? \((?P<what>.*)\)"),
     "unexpected extra argument(s): {what}"),
    (re.compile(r"No such command '(?P<name>[^']+)'\.?"), "no such command: {name}"),
    (re.compile(r"Option '(?P<name>[^']+)' requires an argument\.?"), "{where}: needs a value"),
    (re.compile(r"Missing (?:argument|option) '(?P<name>[^']+)'\."
                r"(?:\s*Choose from:\s*(?P<what>.*))?", re.DOTALL), "{where}: missing{choices}"),
    (re.compile(r"No such option: (?P<name>\S+)(?: \(Possible options: (?P<what>.*)\))?"),
     "{where}: no such option{similar}"),
]


def close_options(name: str, suggested: Sequence[str] | None) -> Sequence[str] | None:
    """The options of `suggested` that look like `name` once their dashes are set aside.

    The parser ranks every option against the typed one dashes and all (difflib, cutoff 0.6),
    and the shared "--" lifts names with nothing else in common: `--bogus` came back
    "(similar: --gpu)". Compared without them, `--gpu` falls off; `--num-block` keeps
    `--num-blocks`."""
    if not suggested:
        return suggested
    from difflib import SequenceMatcher

    word = name.lstrip("-")
    return [s for s in suggested if SequenceMatcher(None, word, s.lstrip("-")).ratio() >= 0.6]


def usage_line(message: str) -> str:
    """A usage error's message in kvcli's words (one line whatever it was)."""
    for pattern, form in _RULES:
        m = pattern.fullmatch(message.strip())
        if m is None:
            continue
        found = m.groupdict()
        # (an option's aliases as typer names them, "--num-blocks / --num-gpu-blocks-override":
        # the spelling the user typed stays in the line)
        name = (found.get("name") or "").replace("' / '", " / ")
        where = f"option {name}" if name.startswith("-") else f"argument {name.upper()}"
        what = _clip_choice(" ".join((found.get("what") or "").split()))
        return form.format(where=where, what=what, name=name,
                           choices=f"; choose from {what.rstrip(',')}" if what else "",
                           similar=f" (similar: {what})" if what else "")
    return " ".join(message.split())


_CHOICE = re.compile(r"'(?P<value>.*)' is not one of (?P<choices>.*)")


def _clip_choice(what: str) -> str:
    """typer's "'VALUE' is not one of ..." with a long VALUE cut (`kvcore.errors.clipped`):
    100,000 characters given to --mode made a 100 KB error line."""
    m = _CHOICE.fullmatch(what)
    if m is None or len(m["value"]) <= 40:
        return what
    from kvcore.errors import clipped

    return f"{clipped(m['value'])} is not one of {m['choices']}"


def command_words(ctx: Any, argv: list[str], app: Any) -> list[str]:
    """The command and subcommand the error is about (``["clock", "explain"]``), for its
    ``kvcli ... -h`` hint: from the context, whatever the program was called (``python -m
    kvcli`` too), else from `argv` (a missing option value is reported by the group)."""
    if ctx is not None:
        words = ctx.command_path[len(ctx.find_root().command_path):].split()
        if words:
            return words
    groups = {g.name for g in app.registered_groups}
    commands = {c.name for c in app.registered_commands} | groups
    if not argv or argv[0] not in commands:
        return []
    if argv[0] in groups and len(argv) > 1 and not argv[1].startswith("-"):
        return argv[:2]
    return argv[:1]
