"""Trace contents a hostile campaign over the shipped samples' lines found to break a command
(after test_hostile_trace_lines.py): each is refused with one line naming file, line and field,
exit code 2, or replays as vLLM would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hostile_options import refused, runner

from kvcli.app import app

REQ = {"prompt_token_ids": [1, 2, 3, 4, 5, 6, 7, 8, 9], "output_length": 2}


def _trace(tmp_path: Path, *lines: dict) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


# -- a cache_salt or lora of another JSON type became Python's spelling of it ('True',
# -- "{'a': 1}"): the replay ran salted by a string no line holds

@pytest.mark.parametrize("field", ["cache_salt", "lora"])
@pytest.mark.parametrize("value, shown", [(True, "true"), (1.5, "1.5"), ([1], "[1]"),
                                          ({"a": 1}, '{"a": 1}')])
@pytest.mark.parametrize("command", ["replay", "curve"])
def test_a_salt_or_lora_is_a_string_or_an_integer(tmp_path, command, field, value, shown):
    path = _trace(tmp_path, REQ, dict(REQ, **{field: value}))
    refused([command, str(path)], f"error: {path}:2: field '{field}': must be a string or an "
            f"integer, got {shown}")


def test_an_empty_cache_salt_is_refused_as_vllm_refuses_it(tmp_path):
    # (read as no salt, the request hit the unsalted prompt's blocks)
    path = _trace(tmp_path, REQ, dict(REQ, cache_salt=""))
    refused(["replay", str(path)], f"error: {path}:2: field 'cache_salt': is empty (vLLM "
            "refuses an empty cache_salt: leave it out)")


@pytest.mark.parametrize("field", ["cache_salt", "lora"])
def test_an_integer_salt_or_lora_replays_as_its_digits(tmp_path, field):
    # the same integer salts alike; another one does not hit
    path = _trace(tmp_path, dict(REQ, **{field: 7}), dict(REQ, **{field: "7"}),
                  dict(REQ, **{field: 8}))
    res = runner.invoke(app, ["replay", str(path), "--mode", "cache", "--block-size", "4",
                              "--num-blocks", "64", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["hit_tokens"] == 8


# -- a key given twice on a line: the JSON reader kept the last without a word (the request
# -- replayed at the second timestamp, the pool sized by the second num_blocks)

MOON = {"timestamp": 5.0, "input_length": 600, "output_length": 2, "hash_ids": [1, 2]}


@pytest.mark.parametrize("command", ["replay", "curve", "stats", "cluster"])
def test_a_key_given_twice_is_refused(tmp_path, command):
    # (four keys a line: the case curve reads whole, with one orjson call, on its fast path)
    path = tmp_path / "t.jsonl"
    line = json.dumps(MOON).replace('{"timestamp": 5.0', '{"timestamp": 900.0, "timestamp": 5.0')
    path.write_text(json.dumps(MOON) + "\n" + line + "\n")
    refused([command, str(path)], f"error: {path}:2: field 'timestamp': key 'timestamp' is given "
            "twice in one object (JSON readers keep the last without a word): give it once")


def test_a_config_key_given_twice_is_named_under_config(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"config": {"num_blocks": 64, "num_blocks": 8}}\n' + json.dumps(REQ) + "\n")
    refused(["replay", str(path)], f"error: {path}:1: field 'config.num_blocks': key "
            "'num_blocks' is given twice in one object")


def test_spacing_nesting_and_colons_in_strings_are_not_a_key_twice(tmp_path):
    plain, odd = tmp_path / "plain.jsonl", tmp_path / "odd.jsonl"
    plain.write_text("".join(json.dumps(x) + "\n" for x in
                             (REQ, dict(REQ, cache_salt='a":b'), REQ)))
    odd.write_text('{"prompt_token_ids" : [1, 2, 3, 4, 5, 6, 7, 8, 9], "output_length"\t: 2,'
                   ' "meta": {"a": {"b": 1}}}\n{"cache_salt": "a\\":b", "prompt_token_ids": '
                   f'[1, 2, 3, 4, 5, 6, 7, 8, 9], "output_length": 2}}\n{json.dumps(REQ)}\n')
    got = [runner.invoke(app, ["replay", str(p), "--mode", "cache", "--block-size", "4", "--json"])
           for p in (plain, odd)]
    assert [r.exit_code for r in got] == [0, 0], got[1].output
    # the third request hits the first's 2 blocks, the salted second none
    assert [json.loads(r.stdout)["hit_tokens"] for r in got] == [8, 8]


# -- a message quoted the line's value whole: a 5,000-character input_length was a 5 KB error
# -- line (and a line may hold 256 MiB)

@pytest.mark.parametrize("field, value, shown", [
    ("input_length", "x" * 5000, "'" + "x" * 36 + "..."),
    ("timestamp", "y" * 5000, "'" + "y" * 36 + "..."),
    ("hash_ids", [1, "z" * 5000], "'" + "z" * 36 + "...")])
def test_a_long_value_is_quoted_cut_short(tmp_path, field, value, shown):
    path = _trace(tmp_path, dict(MOON, **{field: value}))
    line = refused(["replay", str(path)], f"error: {path}:1: field '{field}': ")
    assert line.endswith(f"got {shown}") and len(line) < 200 + len(str(path)), line


def test_a_long_duplicate_id_is_quoted_cut_short(tmp_path):
    path = _trace(tmp_path, dict(REQ, id="d" * 5000), dict(REQ, id="d" * 5000))
    refused(["replay", str(path)], f"error: {path}:2: field 'id': duplicate request id "
            f"'{'d' * 36}... (a line without an id")
