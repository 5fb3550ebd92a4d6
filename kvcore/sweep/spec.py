"""A sweep's spec: the traces, the options every job shares and the grid, from a file or flags.

A spec file is TOML (or JSON when it ends in `.json`):

    command = "replay"                  # or "cluster"
    traces = ["conversation.jsonl"]     # paths relative to the spec file's folder
    results = "grid.results.jsonl"      # optional (default: SPEC's name + .results.jsonl)
    [options]                           # every job: option = value
    max_num_seqs = 64
    [grid]                              # the Cartesian product: option = [values]
    num_blocks = [4096, 8192]

The flags' form is `--trace T ... --set KEY=V1,V2 ... [--command cluster]` (a `--set` with one
value is a fixed option). Every error is an `InputError` naming the file, the line and the key
(`grid.num_blocks`), or `--set`'s entry.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.sources import close_source, open_source, read_text, too_many_digits
from kvcore.sweep.json_spec import loads_spec
from kvcore.sweep.keys import (
    COMMANDS,
    FILE_KEYS,
    BadValue,
    coerce,
    from_text,
    keys_for,
    unknown_key_message,
)
from kvcore.vllm_values import VLLM_KEYS

_TOP = ("command", "traces", "results", "options", "grid")


@dataclass(frozen=True, slots=True)
class SweepSpec:
    command: str
    traces: tuple[str, ...]
    fixed: dict[str, Any]                        # option -> value, every job
    grid: tuple[tuple[str, tuple[Any, ...]], ...]  # (option, values) in the spec's order
    results: str | None = None
    path: str | None = None                      # the spec file (None: flags)
    # option -> (qualified key as written, line) for messages: ("grid.num_blocks", 7)
    where: dict[str, tuple[str, int | None]] = field(default_factory=dict)

    def error(self, key: str, message: str) -> InputError:
        """An `InputError` about option `key` where the spec set it."""
        name, line = self.where.get(key, (key, None))
        if self.path is None:
            return InputError(f"{name}: {message}", field="set")
        return InputError(message, path=self.path, line=line, field=name)


def load_spec(path: str) -> SweepSpec:
    """Read and check a spec file (TOML, or JSON by its `.json` suffix)."""
    name, stream = open_source(path)    # the one opener: its wording for a missing file, ...
    try:
        text = read_text(name, stream)
    finally:
        close_source(stream)
    is_json = path.lower().endswith(".json")
    try:
        # (TOML refuses a key given twice; a JSON spec refuses it as TOML does)
        doc = loads_spec(text, path) if is_json else tomllib.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"not JSON: {err.msg}", path=path, line=err.lineno) from None
    except tomllib.TOMLDecodeError as err:
        m = re.search(r"\(at line (\d+), column \d+\)", str(err))
        msg = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(err))
        at = int(m.group(1)) if m else max(1, len(text.splitlines()))  # at end of document
        raise InputError(f"not TOML: {msg}", path=path, line=at) from None
    except ValueError as err:
        raise too_many_digits(text, path, err) from None
    except RecursionError:
        raise InputError("nested too deeply to be a sweep spec", path=path) from None
    if not isinstance(doc, dict):
        raise InputError("must be a table (an object) of command, traces, options, grid",
                         path=path, line=1)
    lines = _LineFinder(text, is_json)
    for key in doc:
        if key not in _TOP:
            raise InputError(f"unknown key; a spec has {', '.join(_TOP)}", path=path,
                             line=lines.find(None, key), field=key)
    command = doc.get("command", "replay")
    if command not in COMMANDS:
        raise InputError(f"must be replay or cluster, got {clipped(command)}", path=path,
                         line=lines.find(None, "command"), field="command")
    traces = doc.get("traces")
    if isinstance(traces, str):
        traces = [traces]
    if not traces or not isinstance(traces, list) or not all(isinstance(t, str) and t
                                                              for t in traces):
        raise InputError("must be a non-empty list of trace paths", path=path,
                         line=lines.find(None, "traces"), field="traces")
    base = os.path.dirname(path)
    for t in traces:
        if t == "-":
            raise InputError(_STDIN, path=path, line=lines.find(None, "traces"), field="traces")
    traces = [t if os.path.isabs(t) else os.path.normpath(os.path.join(base, t)) for t in traces]
    for t in traces:
        if not os.path.isfile(t):
            what = "is not a file" if os.path.exists(t) else "does not exist"
            raise InputError(f"trace {t} {what}", path=path, line=lines.find(None, "traces"),
                             field="traces")
    results = doc.get("results")
    if results is not None:
        if not isinstance(results, str) or not results:
            raise InputError("must be a path", path=path, line=lines.find(None, "results"),
                             field="results")
        results = results if os.path.isabs(results) else os.path.join(base, results)
    keys = keys_for(command)
    where: dict[str, tuple[str, int | None]] = {}
    fixed: dict[str, Any] = {}
    grid: list[tuple[str, tuple[Any, ...]]] = []
    for section in ("options", "grid"):
        table = doc.get(section, {})
        if not isinstance(table, dict):
            raise InputError("must be a table of option = value", path=path,
                             line=lines.find(None, section), field=section)
        for key, value in table.items():
            name = f"{section}.{key}"
            line: int | None = lines.find(section, key)
            key = VLLM_KEYS.get(str(key), str(key))     # vLLM's name of a kvcli key
            if key not in keys:
                raise InputError(unknown_key_message(key, command), path=path, line=line,
                                 field=name)
            if key in where:
                raise InputError(f"set twice (also {where[key][0]})", path=path, line=line,
                                 field=name)
            where[key] = (name, line)
            try:
                if section == "options":
                    fixed[key] = _beside(coerce(key, value, command), key, base)
                    continue
                if not isinstance(value, list) or not value:
                    raise BadValue("a grid key takes a non-empty list of values")
                grid.append((key, _distinct(key, [_beside(coerce(key, v, command), key, base)
                                                  for v in value])))
            except BadValue as err:
                raise InputError(str(err), path=path, line=line, field=name) from None
    return SweepSpec(command, tuple(traces), fixed, tuple(grid), results, path, where)


# (a replay reads `-` as stdin; a sweep's jobs each read their trace, and its id is the bytes')
_STDIN = "- (stdin) cannot be swept: every job reads its trace file again; save it to a file"


def _beside(value: Any, key: str, base: str) -> Any:
    """A path option's value relative to the spec's folder, as its traces are (it was the
    working folder's: the sweep ran from one folder and not from another); it must exist."""
    if key not in FILE_KEYS or not isinstance(value, str) or not value:
        return value
    if value == "-":
        raise BadValue(_STDIN_FILE)
    path = value if os.path.isabs(value) else os.path.normpath(os.path.join(base, value))
    if not os.path.isfile(path):
        raise BadValue(f"{path} {'is not a file' if os.path.exists(path) else 'does not exist'}"
                       " (a path in a spec is relative to the spec's folder)")
    return path


# (the first job's check would read stdin to its end and every later job would find it empty)
_STDIN_FILE = "- (stdin) cannot be swept: every job reads the file again; save it to a file"


def _flag_file(key: str, value: Any) -> Any:
    """A `--set` file option's value: a file that exists (refused here rather than in a job)."""
    if key not in FILE_KEYS or not isinstance(value, str) or not value:
        return value
    if value == "-":
        raise BadValue(_STDIN_FILE)
    if not os.path.isfile(value):
        raise BadValue(f"{value} {'is not a file' if os.path.exists(value) else 'does not exist'}")
    return value


def spec_from_flags(command: str, traces: list[str], sets: list[str]) -> SweepSpec:
    """The flags' form: `--trace` paths and `--set KEY=V1,V2` entries."""
    if command not in COMMANDS:
        raise InputError(f"must be replay or cluster, got {clipped(command)}", field="command")
    if not traces:
        raise InputError("a sweep needs a SPEC file or at least one --trace", field="trace")
    for t in traces:
        if t == "-":
            raise InputError(_STDIN, field="trace")
        if not os.path.isfile(t):
            what = "is not a file" if os.path.exists(t) else "does not exist"
            raise InputError(f"{t} {what}", field="trace")
    keys = keys_for(command)
    fixed: dict[str, Any] = {}
    grid: list[tuple[str, tuple[Any, ...]]] = []
    where: dict[str, tuple[str, int | None]] = {}
    for item in sets:
        key, eq, text = item.partition("=")
        key = VLLM_KEYS.get(key.strip(), key.strip())
        if not eq or not key or not text:
            raise InputError(f"expected KEY=V1,V2,..., got {item!r}", field="set")
        if key not in keys:
            raise InputError(f"{key}: {unknown_key_message(key, command)}", field="set")
        if key in where:
            raise InputError(f"{key}: set twice", field="set")
        where[key] = (key, None)
        try:
            values = [_flag_file(key, from_text(key, t, command)) for t in split_values(text)]
            if len(values) == 1:
                fixed[key] = values[0]
            else:
                grid.append((key, _distinct(key, values)))
        except BadValue as err:
            raise InputError(f"{key}: {err}", field="set") from None
    return SweepSpec(command, tuple(traces), fixed, tuple(grid), None, None, where)


def split_values(text: str) -> list[str]:
    """`V1,V2,...` split at the commas outside a JSON value's braces, brackets and strings, so
    `{"image":0,"video":0}` stays one value (and `{"image":0},{"image":1}` is two)."""
    parts: list[str] = []
    depth, quoted, escaped, start = 0, False, False, 0
    for i, ch in enumerate(text):
        if quoted:
            escaped, quoted = (not escaped and ch == "\\"), quoted and (escaped or ch != '"')
        elif ch == '"':
            quoted = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        elif ch == "," and depth <= 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _distinct(key: str, values: list[Any]) -> tuple[Any, ...]:
    seen: list[Any] = []
    for v in values:
        if v in seen:
            raise BadValue(f"value {v!r} given twice")
        seen.append(v)
    return tuple(values)


class _LineFinder:
    """The line a key is written on (for messages): the first `key =` (TOML) or `"key":`
    (JSON) after its section's header, else anywhere; None when not found."""

    def __init__(self, text: str, is_json: bool) -> None:
        self.lines = text.splitlines()
        self.is_json = is_json

    def _pattern(self, key: str) -> re.Pattern[str]:
        k = re.escape(key)
        if self.is_json:
            return re.compile(rf'"{k}"\s*:')
        return re.compile(rf'^\s*(?:{k}|"{k}"|\'{k}\')\s*=')

    def find(self, section: str | None, key: str) -> int | None:
        start = 0
        if section is not None:
            header = (re.compile(rf'"{re.escape(section)}"\s*:') if self.is_json
                      else re.compile(rf"^\s*\[\s*{re.escape(section)}\s*\]"))
            start = next((i for i, t in enumerate(self.lines) if header.search(t)), 0)
        pat = self._pattern(key)
        for i in range(start, len(self.lines)):
            if pat.search(self.lines[i]):
                return i + 1
        return None
