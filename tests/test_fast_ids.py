"""The token-id reader's C path (`kvcore.traces.fast_ids`, `native_ids.pyx`; compiled build):
whatever it reads is what the JSON path reads (the object, the ids, their array), and whatever
it cannot read exactly it leaves to the JSON path (None), so that errors keep their messages."""

from __future__ import annotations

import json
import random
from array import array

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvcore import compiled
from kvcore.errors import InputError
from kvcore.traces import fast_ids, read_trace
from kvcore.traces.formats import MAX_REQUEST_TOKENS

native = compiled.native("kvcore.traces.native_ids")
pytestmark = pytest.mark.skipif(native is None, reason="the C reader needs the compiled build")


def json_path(text: str) -> tuple[dict, array]:
    obj = orjson.loads(text)
    return obj, array("Q", obj["prompt_token_ids"])


def check(text: str, *, taken: bool) -> None:
    """``cut_prompt`` gives the JSON path's object and array (``taken``), or None."""
    assert fast_ids.available()
    got = fast_ids.cut_prompt(text, MAX_REQUEST_TOKENS)
    if not taken:
        assert got is None, text
        return
    assert got is not None, text
    obj, ids = got
    want_obj, want_ids = json_path(text)
    assert obj == want_obj and list(obj) == list(want_obj)        # the keys' order too
    assert ids == want_ids and ids.typecode == "Q"


@pytest.mark.parametrize("ids, taken", [
    ("1", True), ("0", True), ("0, 1, 2", True), ("18446744073709551615", True),
    ("1844674407370955161", True), ("9999999999999999999", True),
    ("18446744073709551616", False), ("99999999999999999999", False),
    ("184467440737095516150", False), ("1.0", False), ("1e3", False), ("1E3", False),
    ("-1", False), ("-0", False), ("true", False), ("false", False), ("null", False),
    ('"1"', False), ("[1]", False), ("", False), (" ", False), ("1,", False), (",1", False),
    ("1 2", False), ("00", False), ("01", False), ("1, 01", False),
    (" 1 ,\t2\n,\r3 ", True), ("5" * 19, True), ("1" + "0" * 19, True),
])
def test_lists(ids, taken):
    text = '{"id": "a", "prompt_token_ids": [' + ids + '], "output_length": 3}'
    try:
        json_path(text)
    except (orjson.JSONDecodeError, TypeError, OverflowError):
        assert not taken
    check(text, taken=taken)


@pytest.mark.parametrize("text, taken", [
    ('{"prompt_token_ids":[1,2]}', True),
    ('{ "prompt_token_ids" : [ 1 , 2 ] }', True),
    ('{\t"prompt_token_ids"\n:\r[1]}', True),
    ('{"output_length": 2, "prompt_token_ids": [7, 8]}', True),
    ('{"id": "ünïcode", "prompt_token_ids": [7]}', True),       # Latin-1: one byte a character
    ('{"id": "\u6f22", "prompt_token_ids": [7]}', False),       # two bytes a character
    ('{"id": "\\"prompt_token_ids\\": [1]", "prompt_token_ids": [2]}', True),  # in a string
    ('{"id": "a\\"prompt_token_ids\": [1]"}', False),            # after a backslash
    ('{"id": "x\\\\", "prompt_token_ids": [2]}', True),         # a string ending in a backslash
    ('{"meta": {"prompt_token_ids": [1, 2]}, "output_length": 1}', False),      # nested
    ('{"prompt_token_ids": [1], "prompt_token_ids": [2]}', False),              # twice
    ('{"prompt\\u005ftoken_ids": [5], "prompt_token_ids": [1, 2]}', True),      # the last wins
    ('{"prompt_token_ids": [1, 2], "prompt\\u005ftoken_ids": [5]}', False),
    ('{"prompt_token_ids": []}', False),
    ('{"prompt_token_ids": [1, 2]', False),                     # unclosed: the JSON path's error
    ('{"a": "x,"prompt_token_ids": [1]}', False),               # a string's closing quote
    ('["prompt_token_ids", [1]]', False),
    ('{"input_length": 5, "hash_ids": [1]}', False),
    ('{"prompt_token_ids": 5}', False),
])
def test_lines(text, taken):
    check(text, taken=taken)


def test_the_limit_is_one_id_more_than_it_takes():
    for n, taken in ((1023, True), (1024, True), (1025, True), (4096, True)):
        text = json.dumps({"prompt_token_ids": list(range(n))})
        pos = text.index("[") + 1
        assert native.parse_ids(text, pos, n) is not None
        assert native.parse_ids(text, pos, n - 1) is None
    assert native.parse_ids('[1]', 1, 0) is None
    assert native.parse_ids('[1]', 0, 5) is None and native.parse_ids('[1]', 2, 5) is None


@settings(max_examples=300, deadline=None)
@given(ids=st.lists(st.one_of(st.integers(0, 2**64 + 5), st.integers(-3, 3), st.booleans(),
                              st.floats(allow_nan=False, allow_infinity=False)), max_size=40),
       extra=st.dictionaries(st.sampled_from(["id", "output_length", "prompt_tokens", "x"]),
                             st.one_of(st.integers(0, 99), st.text(max_size=5)), max_size=3),
       indent=st.sampled_from([None, 0, 2]), first=st.booleans())
def test_random_lines_read_as_the_json_path_reads_them(ids, extra, indent, first):
    obj = {"prompt_token_ids": ids, **extra} if first else {**extra, "prompt_token_ids": ids}
    text = json.dumps(obj, indent=indent).replace("\n", " ")
    try:
        _, want = json_path(text)
        plain = all(type(v) is int for v in orjson.loads(text)["prompt_token_ids"])
    except (TypeError, OverflowError, orjson.JSONDecodeError):
        plain = want = None
    got = fast_ids.cut_prompt(text, MAX_REQUEST_TOKENS)
    if got is not None:
        assert plain and got[1] == want and got[0] == orjson.loads(text)
    else:
        assert not plain or not ids


def write(path, lines: list[str]) -> str:
    path.write_text("".join(x + "\n" for x in lines))
    return str(path)


def test_traces_read_the_same_on_both_paths(tmp_path, monkeypatch):
    rng = random.Random(5)
    lines = []
    for i in range(60):
        ids = [rng.choice([0, 1, 2, rng.randrange(2**64)]) for _ in range(rng.randrange(1, 3000))]
        line = json.dumps({"id": f"r{i}", "prompt_token_ids": ids, "output_length": 4,
                           "arrival_step": i, "output_token_ids": [1, 0, 3, 4]},
                          separators=(",", ":") if i % 2 else (", ", ": "))
        lines.append(line)
    path = write(tmp_path / "t.jsonl", lines)
    fast = read_trace(path)
    monkeypatch.setattr(fast_ids, "available", lambda: False)
    slow = read_trace(path)
    assert fast.requests == slow.requests
    assert all(r.prompt_array == array("Q", r.prompt_token_ids) for r in fast.requests)


@pytest.mark.parametrize("bad, field, message", [
    ('"prompt_token_ids": [1, true, 3]', "prompt_token_ids", "got True"),
    ('"prompt_token_ids": [1, 2.5]', "prompt_token_ids", "got 2.5"),
    ('"prompt_token_ids": []', "prompt_token_ids", "is empty"),
    ('"prompt_token_ids": [1, 01]', None, "malformed JSON"),
    ('"prompt_token_ids": [1], "output_token_ids": [true]', "output_token_ids", "got True"),
])
def test_errors_are_the_json_paths(tmp_path, monkeypatch, bad, field, message):
    good = json.dumps({"id": "a", "prompt_token_ids": [5, 6], "output_length": 1})
    path = write(tmp_path / "t.jsonl", [good, good.replace('"a"', '"b"'),
                                        '{"id": "c", ' + bad + ', "output_length": 1}'])
    errors = []
    for fast in (True, False):
        monkeypatch.setattr(fast_ids, "available", lambda fast=fast: fast)
        with pytest.raises(InputError) as e:
            read_trace(path)
        errors.append((e.value.line, e.value.field, e.value.message))
    assert errors[0] == errors[1]
    assert errors[0][0] == 3 and errors[0][1] == field and message in errors[0][2]
