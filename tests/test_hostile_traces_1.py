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
