"""A trace gives every request a timestamp or none (`kvcore/traces/arrival_fields.py`). A
Mooncake line that lost its `timestamp` read as 0 ms and was replayed first, said only by the
count of requests out of order; now it is refused in every format and command, naming the file,
the line and the field. A trace with no timestamp at all still arrives at 0 ms, in file order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hostile_options import refused

from kvcore.traces import read_trace

WHY = "a trace gives every request a timestamp or none (with none, all arrive at 0 ms)"
# one request of each format, without a timestamp
FORMATS = {
    "mooncake": {"input_length": 600, "output_length": 2, "hash_ids": [1, 2]},
    "bailian": {"chat_id": 7, "input_length": 20, "output_length": 2, "hash_ids": [1, 2]},
    "tokens": {"prompt_token_ids": [1, 2, 3], "output_length": 2},
    "lengths": {"input_length": 20, "output_length": 2},
}


def _trace(tmp_path: Path, *lines: dict) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_line_without_the_timestamp_the_first_has_is_refused(tmp_path, fmt):
    req = FORMATS[fmt]
    path = _trace(tmp_path, dict(req, timestamp=5), dict(req, timestamp=9), req)
    refused(["replay", str(path)], f"error: {path}:3: field 'timestamp': missing, but the "
            f"first request (line 1) has one: {WHY}")


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_timestamp_where_the_first_request_has_none_is_refused(tmp_path, fmt):
    req = FORMATS[fmt]
    path = tmp_path / "t.jsonl"
    # (after a config line and a comment: the line named is the file's)
    path.write_text('{"config": {}}\n# no times\n' + json.dumps(req) + "\n"
                    + json.dumps(dict(req, timestamp=0)) + "\n")
    refused(["replay", str(path)], f"error: {path}:4: field 'timestamp': given, but the first "
            f"request (line 3) has none: {WHY}")


@pytest.mark.parametrize("command", ["replay", "stats", "curve", "cluster"])
def test_a_null_timestamp_counts_as_none_in_every_command(tmp_path, command):
    req = FORMATS["mooncake"]
    path = _trace(tmp_path, dict(req, timestamp=1000), dict(req, timestamp=None))
    refused([command, str(path)], f"error: {path}:2: field 'timestamp': null, but the first "
            f"request (line 1) has one: {WHY}")


def test_a_long_trace_read_twice_is_refused_on_the_first_reading(tmp_path):
    req = FORMATS["mooncake"]
    path = _trace(tmp_path, *[dict(req, timestamp=i) for i in range(5)], req)
    with pytest.raises(Exception) as err:
        read_trace(str(path), keep=2)
    assert str(err.value) == (f"{path}:6: field 'timestamp': missing, but the first request "
                              f"(line 1) has one: {WHY}")


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_no_timestamp_anywhere_arrives_at_0_in_file_order(tmp_path, fmt):
    req = FORMATS[fmt]
    lines = [dict(req, id=f"r{i}") if fmt != "bailian" else dict(req, chat_id=i)
             for i in range(3)]
    path = _trace(tmp_path, *lines, dict(req, timestamp=None, **(
        {"id": "r3"} if fmt != "bailian" else {"chat_id": 3})))
    trace = read_trace(str(path))
    assert [(r.line, r.arrival_ms) for r in trace.held()] == [(1, 0.0), (2, 0.0), (3, 0.0),
                                                               (4, 0.0)]
    assert trace.out_of_order == 0
