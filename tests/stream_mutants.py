"""One-field mutants of an event stream `kvcli replay --events` wrote, and what `kvcli stats`
makes of each: the mutation fuzzer of `test_stream_fuzz.py`.

A mutant changes one thing on one line: a field's value to another JSON type (string, float,
bool, null, list, object, 2**70, a negative number), one element of a list field the same way,
a field removed or an extra one added, the line cut short, doubled, or swapped with the next.
Only values the schema (docs/events.md) rules out are made: a different valid value may change
the report as it should. `kvcli stats` must then give the original's report (the reader does
not use what changed) or refuse it naming the file, the line and the field.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import orjson

from kvcore.errors import InputError

# Wrong values by the JSON type of the value they replace (a float where an int is, an int
# where a float is: 1 for 1.0 is the same number, so no int replaces a float).
_OTHERS = {"str": 5, "float": 1.5, "bool": True, "null": None, "list": [1], "object": {"a": 1},
           "huge": 2 ** 70, "string": "x"}
_WRONG = {
    int: ("string", "float", "bool", "null", "list", "object", "huge", "negative"),
    float: ("string", "bool", "null", "list", "object", "negative"),
    str: ("str", "float", "bool", "null", "list", "object"),
    bool: ("string", "float", "null", "list", "object", "str"),
    list: ("string", "str", "bool", "null", "object"),
    dict: ("string", "str", "bool", "null", "list"),
}
# Fields where null is a valid value (docs/events.md): a null there is no mutant.
NULLABLE = {"req", "group", "hash_domain", "reason", "ttft_ms", "tpot_ms", "e2e_ms", "queue_ms",
            "prompt_hashes[]", "first_tokens[]", "content_hashes[]", "sliding_window",
            "uncalibrated_clock", "trace"}


def _wrong_values(value, name: str) -> Iterator[tuple[str, object]]:
    for what in _WRONG.get(type(value), ()):
        if what == "null" and name in NULLABLE:
            continue
        if what == "negative":
            if value <= 0:
                continue
            yield what, -value
        else:
            yield what, _OTHERS[what]


def _paths(ev: dict) -> Iterator[tuple[tuple, str]]:
    """(the path to a value, its field's name) for each top-level field, each element of a
    list field (inner lists' too) and each key of an object field."""
    for key, value in ev.items():
        yield (key,), key
        if isinstance(value, list):
            # (the first and the last element: a list's elements took most of a line's
            # mutants, and its scalar fields were rarely drawn)
            for i in sorted({0, len(value) - 1} if value else ()):
                x = value[i]
                yield (key, i), key + "[]"
                if isinstance(x, list):
                    for j in sorted({0, len(x) - 1} if x else ()):
                        yield (key, i, j), key + "[][]"
                elif isinstance(x, dict):
                    for k in x:
                        yield (key, i, k), k
        elif isinstance(value, dict):
            for k in value:
                yield (key, k), k


def _get(ev, path):
    for p in path:
        ev = ev[p]
    return ev


def _set(ev, path, value):
    for p in path[:-1]:
        ev = ev[p]
    ev[path[-1]] = value


def _delete(ev, path):
    for p in path[:-1]:
        ev = ev[p]
    del ev[path[-1]]


def mutants(lines: list[bytes], rng: random.Random, per_line: int,
            n_lines: int | None = None) -> Iterator[tuple]:
    """(description, the mutated line's 1-based number, the mutated lines), ``per_line`` of
    them at random for each line (``n_lines`` lines at random, the header and the `end`
    line always among them), from every mutation the line admits."""
    picked = range(len(lines))
    if n_lines is not None and n_lines < len(lines):
        picked = sorted({0, len(lines) - 1, *rng.sample(range(len(lines)), n_lines - 2)})
    for at in picked:
        raw = lines[at]
        ev = orjson.loads(raw)
        kind = ev.get("kind")
        options: list[tuple] = [("truncated", None, None), ("duplicated", None, None),
                                ("extra key", None, None)]
        if at + 1 < len(lines):
            options.append(("swapped", None, None))
        for path, name in _paths(ev):
            value = _get(ev, path)
            if not isinstance(path[-1], int):
                options.append(("missing", path, None))
            options.extend((what, path, v) for what, v in _wrong_values(value, name))
        for what, path, value in rng.sample(options, min(per_line, len(options))):
            new = list(lines)
            if what == "truncated":
                new[at] = raw[:rng.randrange(1, max(2, len(raw.rstrip()) - 1))] + b"\n"
            elif what == "duplicated":
                new.insert(at, raw)
            elif what == "swapped":
                new[at], new[at + 1] = new[at + 1], new[at]
            else:
                mutated = orjson.loads(raw)
                if what == "extra key":
                    mutated["zz_extra"] = [1, "x"]
                elif what == "missing":
                    _delete(mutated, path)
                else:
                    _set(mutated, path, value)
                # (json: orjson writes no integer past 64 bits)
                new[at] = json.dumps(mutated, separators=(",", ":")).encode() + b"\n"
            where = ".".join(map(str, path)) if path else ""
            yield f"line {at + 1} ({kind}) {where} {what}", at + 1, new


def stats_of(path: Path):
    """The report of `kvcli stats PATH` (a dict), or the `InputError` it refuses it with."""
    from kvcli.commands.stats import compute

    try:
        return compute(str(path), None, window_requests=1000, window_ms=60_000.0, top=10)
    except InputError as err:
        return err


def failures(stream: Path, tmp: Path, seed: int, per_line: int,
             n_lines: int | None = None) -> Iterator[str]:
    """What goes wrong with the mutants of ``stream``: a report that differs from the
    original's, an error that names no line or field, or any other exception."""
    lines = stream.read_bytes().splitlines(keepends=True)
    want = stats_of(stream)
    assert isinstance(want, dict), want
    path = tmp / stream.name
    for what, lineno, new in mutants(lines, random.Random(seed), per_line, n_lines):
        path.write_bytes(b"".join(new))
        try:
            got = stats_of(path)
        except Exception as err:      # noqa: BLE001 - a traceback is the failure reported
            yield f"{what}: {type(err).__name__}: {str(err)[:120]}"
            continue
        if isinstance(got, InputError):
            near = got.line is not None and abs(got.line - lineno) <= 1
            if got.path != str(path) or not near or (got.field is None
                                                     and not _fieldless(got, what, lineno)):
                yield f"{what}: refused as {got}"
        elif got != want and not _told(got, want) and not _optional(what):
            yield f"{what}: a report that differs"


# Errors of a line as a whole: not JSON, after the `end` line, a stream cut short.
_WHOLE_LINE = ("not JSON", "data after the", "truncated stream")


def _fieldless(err: InputError, what: str, lineno: int) -> bool:
    """Whether an error may name no field: the line's own, or the first line's where it is no
    header any more (its `kind` changed, or another line took its place): the file is then
    read as a trace, and the trace reader refuses its line 1."""
    header_gone = lineno == 1 and any(w in what for w in (" kind ", "swapped", "duplicated"))
    return any(w in err.message for w in _WHOLE_LINE) or (header_gone and err.line == 1)


# Keys whose absence means something documented (docs/events.md, "Fields a reader may miss"):
# a header group without `block_size` or `type` (the header's block, full attention), a header
# without `hash_block_size` (the groups' own block), an `admit` without its hash lists (misses
# not told apart); a `config` key (the option's default); `uncalibrated_clock` (a stream from
# before it).
_OPTIONAL = ("(header) config.", "(header) uncalibrated_clock missing",
             "(header) groups.0.block_size ", "(header) groups.1.block_size ",
             "(header) groups.2.block_size ", "(header) groups.0.type missing",
             "(header) groups.1.type missing", "(header) groups.2.type missing",
             "(header) hash_block_size missing", "(admit) prompt_hashes missing",
             "(admit) first_tokens missing", "(admit) content_hashes missing",
             "(admit) chain_hashes missing", "(admit) chain_first_tokens missing",
             "(admit) chain_content_hashes missing")


def _optional(what: str) -> bool:
    return any(o in what and ("missing" in what or "null" in what) for o in _OPTIONAL)


def _told(got: dict, want: dict) -> bool:
    """Whether the reports differ only in the totals the stream's own summary (its `end`
    line) disagrees with: `kvcli stats` warns of those."""
    def less(report: dict) -> dict:
        return dict(report, source=dict(report["source"], summary_mismatches=None))
    return bool(got["source"]["summary_mismatches"]) and less(got) == less(want)
