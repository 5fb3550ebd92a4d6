"""Trace readers: formats, content derivation, ordering and bad input."""

from __future__ import annotations

import gzip
import json

import pytest

from kvcore.errors import InputError
from kvcore.traces import read_trace
from kvcore.traces.request import OUTPUT_TOKEN_BASE


def write(tmp_path, name, lines):
    p = tmp_path / name
    p.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return str(p)


def test_mooncake_content_and_order(tmp_path):
    p = write(tmp_path, "t.jsonl", [
        {"timestamp": 5, "input_length": 5, "output_length": 2, "hash_ids": [7, 9],
         "block_size": 4},
        {"timestamp": 1, "input_length": 4, "output_length": 1, "hash_ids": [7],
         "block_size": 4},
        {"timestamp": 1, "input_length": 3, "output_length": 1, "hash_ids": [8],
         "block_size": 4},
    ])
    t = read_trace(p)
    assert t.format == "mooncake"
    # Timestamp order, ties in file order; ids are the 0-based file positions.
    assert [r.id for r in t.requests] == ["1", "2", "0"]
    r0 = t.requests[2]
    # Block i with id h holds tokens h*TB .. h*TB+n-1; the last block is partial.
    assert r0.prompt_tokens() == [28, 29, 30, 31, 36]
    assert t.requests[0].prompt_tokens() == [28, 29, 30, 31]     # same id, same content
    assert r0.trace_blocks() == [(7, 4), (9, 1)]
    assert r0.arrival_ms == 5.0


def test_output_tokens_follow_the_oracle():
    from kvcore.traces.request import TraceRequest
    r = TraceRequest(index=3, line=4, id="x", arrival_ms=0, arrival_step=0, prompt_len=1,
                     output_len=5, prompt_token_ids=[1])
    assert r.output_token(2, 512) == OUTPUT_TOKEN_BASE + 3 * 513 + 2
    # No max_model_len given: the oracle's default 8192 sets the stride.
    assert r.output_token(0, None) == OUTPUT_TOKEN_BASE + 3 * 8193
    r.output_token_ids = [11, 12]
    assert r.output_token(1, None) == 12


def test_token_format_config_line_and_gz(tmp_path):
    p = tmp_path / "t.jsonl.gz"
    with gzip.open(p, "wt") as f:
        f.write(json.dumps({"config": {"block_size": 4, "max_model_len": 64}}) + "\n")
        f.write(json.dumps({"id": "a", "prompt_token_ids": [1, 2, 3], "output_length": 2,
                            "arrival_step": 3, "priority": 1, "cache_salt": "s"}) + "\n")
        f.write(json.dumps({"prompt_token_ids": [4], "output_token_ids": [9, 9]}) + "\n")
    t = read_trace(str(p))
    assert t.format == "tokens" and t.config == {"block_size": 4, "max_model_len": 64}
    a, b = t.requests
    assert (a.id, a.arrival_step, a.priority, a.cache_salt) == ("a", 3, 1, "s")
    assert b.id == "3" and b.output_len == 2     # default id: the file line number


def test_bailian_seconds_and_block_16(tmp_path):
    p = write(tmp_path, "b.jsonl", [
        {"chat_id": 10, "parent_chat_id": -1, "timestamp": 1.5, "input_length": 20,
         "output_length": 3, "type": "text", "turn": 1, "hash_ids": [1, 2]}])
    (r,) = read_trace(p).requests
    assert r.arrival_ms == 1500.0 and r.trace_block_size == 16 and len(r.prompt_tokens()) == 20


def test_azure_csv_unique_content(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "2023-11-16 18:15:46.6805900,600,44\n"
                 "2023-11-16 18:15:47.1805900,600,10\n")
    t = read_trace(str(p))
    assert t.format == "azure"
    a, b = t.requests
    assert b.arrival_ms == pytest.approx(500.0)
    assert not set(a.prompt_tokens()) & set(b.prompt_tokens())   # every prompt unique


def test_lengths_format(tmp_path):
    p = write(tmp_path, "l.jsonl", [{"input_length": 10, "output_length": 1},
                                    {"input_length": 10, "output_length": 1}])
    a, b = read_trace(p).requests
    assert a.prompt_tokens() != b.prompt_tokens()


@pytest.mark.parametrize("lines, line, field", [
    (['{"timestamp": 0, "input_length": 4'], 1, None),                          # malformed
    ([{"timestamp": 0, "output_length": 1, "hash_ids": [1]}], 1, "input_length"),   # missing
    ([{"timestamp": 0, "input_length": -3, "output_length": 1, "hash_ids": [1]}], 1,
     "input_length"),                                                          # negative
    ([{"timestamp": -1, "input_length": 3, "output_length": 1, "hash_ids": [1]}], 1,
     "timestamp"),
    ([{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1]}], 1,
     "hash_ids"),                                                              # 600 needs 2
    ([{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1]},
      {"timestamp": 0, "input_length": 3, "output_length": 0, "hash_ids": [1]}], 2,
     "output_length"),
    ([{"prompt_token_ids": [], "output_length": 1}], 1, "prompt_token_ids"),
    ([{"prompt_token_ids": ["x"], "output_length": 1}], 1, "prompt_token_ids"),
    ([{"id": "a", "prompt_token_ids": [1], "output_length": 1},
      {"id": "a", "prompt_token_ids": [1], "output_length": 1}], 2, "id"),
    ([{"config": 3}], 1, "config"),
    ([{"foo": 1}], 1, None),
    ([], 1, None),                                                             # empty
    ([{"config": {}}], 1, None),                                               # no requests
])
def test_bad_input_names_file_line_field(tmp_path, lines, line, field):
    p = write(tmp_path, "bad.jsonl", lines)
    with pytest.raises(InputError) as ei:
        read_trace(p)
    err = ei.value
    assert (err.path, err.line, err.field) == (p, line, field)
    assert str(err).startswith(f"{p}:{line}: ")


def test_missing_file():
    with pytest.raises(InputError, match="no such file"):
        read_trace("/nonexistent/trace.jsonl")


def _prioritised(tmp_path, priorities):
    return write(tmp_path, "p.jsonl", [
        {"id": f"r{i}", "prompt_token_ids": list(range(1, 40)), "output_length": 3,
         "priority": p} for i, p in enumerate(priorities)])


@pytest.mark.parametrize("given", [2 ** 63, 10 ** 30, -10 ** 30, -2 ** 63 - 1024, 1e19])
def test_a_priority_past_64_bits_is_refused(tmp_path, given):
    # vLLM's API takes a 64-bit priority (`Field(ge=-(2**63), le=2**63 - 1)`); past it, kvcli
    # took 10**30 as orjson's double, 1000000000000000019884624838656 (orjson reads a literal
    # past 64 bits as a double: -2**63 - 1024 is -2**63 rounded, shown as the double read)
    from typer.testing import CliRunner

    from kvcli.app import app

    p = _prioritised(tmp_path, [0, given])
    r = CliRunner().invoke(app, ["replay", p, "--policy", "priority", "--json"])
    shown = {2 ** 63: "9223372036854775808", 10 ** 30: "1e+30", -10 ** 30: "-1e+30",
             -2 ** 63 - 1024: "-9.223372036854776e+18", 1e19: "1e+19"}[given]
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", (
        f"error: {p}:2: field 'priority': must be a 64-bit integer (-2**63 to 2**63 - 1, "
        f"vLLM's API range), got {shown}\n"))


def test_the_64_bit_ends_are_read_exactly_and_run_in_order(tmp_path):
    from typer.testing import CliRunner

    from kvcli.app import app

    ends = [0, 2 ** 63 - 1, -2 ** 63, -2 ** 62 - 1]
    p = _prioritised(tmp_path, ends)
    assert [r.priority for r in read_trace(p).requests] == ends
    out = tmp_path / "requests.jsonl"
    r = CliRunner().invoke(app, ["replay", p, "--policy", "priority", "--arrivals", "ignore",
                                 "--max-num-seqs", "1", "--requests", str(out), "--json"])
    assert r.exit_code == 0, r.output
    # lowest first, one at a time (4 steps each: the prompt, then 3 output tokens)
    first = {x["id"]: x["first_scheduled_step"] for x in map(json.loads, out.open())}
    assert first == {"r2": 0, "r3": 4, "r0": 8, "r1": 12}
