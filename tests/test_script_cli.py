"""`kvcli script`: the JSON lines, --view, stdin and .gz input, and bad input (exit 2, one line)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

CASES = Path(__file__).resolve().parent / "data" / "oracle_cases"   # see data/README.md
runner = CliRunner()


def _lines(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def test_prints_the_oracle_lines():
    res = runner.invoke(app, ["script", str(CASES / "reject-tiny.ops.json")])
    assert res.exit_code == 0, res.output
    got = _lines(res.stdout)
    assert [g["op"] for g in got] == ["new", "new", "free", "prefill", "free", "summary"]
    assert got[0] == {"op": "new", "id": "a", "prompt_len": 21, "hit": 0, "ok": False,
                      "free": 5}
    assert got[1]["new_block_ids"] == [[1]] and got[1]["free"] == 4
    assert got[-1]["prefix_cache_stats"] == {"requests": 1, "queries": 20, "hits": 0}


def test_stdin_and_gzip(tmp_path):
    text = (CASES / "hybrid-tiny.ops.json").read_text()
    expected = _lines((CASES / "hybrid-tiny.expected.jsonl").read_text())
    res = runner.invoke(app, ["script", "-"], input=text)
    assert res.exit_code == 0
    assert [g["block_table"] for g in _lines(res.stdout)[:4]] == \
        [e["block_table"] for e in expected[:4]]
    gz = tmp_path / "t.ops.json.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    res2 = runner.invoke(app, ["script", str(gz)])
    assert res2.exit_code == 0 and res2.stdout == res.stdout


def test_kv_events_on_every_op_line(tmp_path):
    ops = tmp_path / "e.jsonl"
    ops.write_text("\n".join(json.dumps(x) for x in [
        {"config": {"block_size": 4, "num_blocks": 3, "kv_events": True}},
        {"op": "new", "id": "a", "prompt": [1, 2, 3, 4, 5]},
        {"op": "free", "id": "a"},
        {"op": "new", "id": "b", "prompt": [9, 9, 9, 9, 9, 9, 9, 9]},
    ]) + "\n")
    res = runner.invoke(app, ["script", str(ops)])
    lines = _lines(res.stdout)
    assert [e["type"] for e in lines[0]["events"]] == ["BlockStored"]
    assert lines[0]["events"][0]["token_ids"] == [1, 2, 3, 4]
    assert lines[1]["events"] == []
    # b needs both usable blocks: block 1 (a's cached block) is evicted on reuse.
    assert [e["type"] for e in lines[2]["events"]] == ["BlockRemoved", "BlockStored"]
    assert lines[2]["events"][0]["block_hashes"] == lines[0]["events"][0]["block_hashes"]
    assert "events" not in lines[-1]


def test_view_renders_blocks_per_op():
    res = runner.invoke(app, ["script", "--view", str(CASES / "hybrid-tiny.ops.json")],
                        env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "new a (10 tok, hit 0)" in out and "g0: 1,2,3" in out and "g1: 4,5,6" in out
    assert "new b (9 tok, hit 8)" in out  # hits of b: g0 1,2 and g1 4,5
    assert "g0: 8,3,2,1" in out  # c freed tail first
    assert "prefix cache: 3 admitted requests, 20 of 32 prompt tokens hit" in out


def test_view_of_a_refused_decode_shows_the_blocks_still_held():
    # the refused decode's row had a blank table, as if request a had lost blocks 1-4
    ops = CASES.parents[2] / "traces" / "decode-paths.ops.jsonl"
    res = runner.invoke(app, ["script", "--view", str(ops)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    row = next(ln for ln in res.stdout.splitlines() if "decode a +97" in ln)
    assert "refused" in row and "1,2,3,4 (held)" in row


BAD = [
    ('{"config": {"block_size": 0}}\n', ":1: field 'block_size'"),
    ('{"config": {"block_size": -4}}\n', ":1: field 'block_size'"),
    ('{"config": {"num_blocks": 0}}\n', ":1: field 'num_blocks'"),
    ('{"config": {"hash": "md5"}}\n', ":1: field 'hash': unknown hash 'md5'"),
    ('{"config": {"groups": [{"type": "banana"}]}}\n', ":1: field 'type': unknown group type"),
    ('{"config": {"groups": [{"type": "sliding_window"}]}}\n', "field 'sliding_window'"),
    ('{"config": {}}\n{"op": "new", "id": "a", "prompt": [1]}\n{"op": "jump", "id": "a"}\n',
     ":3: field 'op': unknown op 'jump'"),
    ('{"config": {}}\n{"op": "new", "id": "a", "prompt": [1, 2\n', ":2: not valid JSON"),
    ('{"config": {}}\n{"op": "new", "id": "a", "prompt": "abc"}\n', ":2: field 'prompt'"),
    ('{"op": "new", "id": "a", "prompt": [1]}\n', ":1: the first line must be"),
    (('{"config": {}, "ops": [\n {"op": "new", "id": "a", "prompt": [1]},\n'
      ' {"op": "decode", "id": "a", "token": "x"}\n]}\n'), ":3: field 'token'"),
]


@pytest.mark.parametrize("text,message", BAD)
def test_bad_input_is_one_line_and_exit_2(tmp_path, text, message):
    path = tmp_path / "bad.ops.jsonl"
    path.write_text(text)
    res = runner.invoke(app, ["script", str(path)])
    assert res.exit_code == 2
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in res.output
    assert err.startswith(f"error: {path}") and message in err, err
    assert res.stdout == ""


def test_missing_file(tmp_path):
    res = runner.invoke(app, ["script", str(tmp_path / "nope.jsonl")])
    assert res.exit_code == 2 and "no such file" in res.stderr


def test_hash_seed_option_and_pythonhashseed_ignored(tmp_path):
    from kvcore.hashing import BlockHasher
    from kvcore.request import Request

    path = tmp_path / "h.jsonl"
    path.write_text('{"config": {"block_size": 2}}\n{"op": "new", "id": "a", "prompt": [1, 2, 3]}'
                    '\n{"op": "hashes", "id": "a"}\n')

    def hashes(args, env=None):
        res = runner.invoke(app, ["script", str(path), *args], env=env)
        return _lines(res.stdout)[1]["block_hashes"]

    default = [h.hex() for h in Request("a", [1, 2, 3], BlockHasher(2)).block_hashes]
    seeded = [h.hex() for h in Request("a", [1, 2, 3], BlockHasher(2, seed="x")).block_hashes]
    assert hashes([]) == default and hashes([], env={"PYTHONHASHSEED": "5"}) == default
    assert hashes(["--hash-seed", "x"]) == seeded != default


def test_a_negative_token_id_is_refused_as_a_trace_refuses_it(tmp_path):
    # (both ran: hashed as given, which no tokenizer gives)
    ops = tmp_path / "neg.ops.jsonl"
    new = '{"op": "new", "id": "a", "prompt": [1, -2, -3]}'
    ops.write_text('{"config": {}}\n' + new + "\n")
    res = runner.invoke(app, ["script", str(ops)])
    assert (res.exit_code, res.stdout) == (2, "")
    assert res.stderr == f"error: {ops}:2: field 'prompt': must hold non-negative integers, got -2\n"
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"prompt_token_ids": [1, -2, -3], "output_length": 1}\n')
    said = runner.invoke(app, ["replay", str(trace)]).stderr
    assert said == f"error: {trace}:1: field 'prompt_token_ids': must hold non-negative " \
                   "integers, got -2\n"
    ops.write_text('{"config": {}}\n{"op": "new", "id": "a", "prompt": [1]}\n'
                   '{"op": "decode", "id": "a", "token": -1}\n')
    res = runner.invoke(app, ["script", str(ops)])
    assert (res.exit_code, res.stdout) == (2, "")
    assert res.stderr == f"error: {ops}:3: field 'token': must be >= 0, got -1\n"
