"""`kvcli curve`'s whole-file Mooncake reader: same arrays and curve as the per-line reader, and
every unusual or bad file handed to that reader (so errors still name file:line: field)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.analysis.curve import CurveOptions, compute_curve
from kvcore.analysis.curve.fastread import read_hash_id_trace
from kvcore.analysis.curve.input import build_input, chained_input
from kvcore.traces import read_trace

DATA = Path(__file__).resolve().parent / "data" / "traces"
CONVERSATION = DATA / "mooncake" / "conversation_trace.jsonl.gz"
runner = CliRunner()


def _slow(path: str, rule: str, warmup: float = 0.0):
    return build_input(read_trace(path).requests, rule=rule, block_size=512, warmup=warmup)


def _fast(path: str, rule: str):
    a = read_hash_id_trace(path)
    assert a is not None
    return chained_input(a.ids, a.lens, a.num_tokens, rule, 512)


def _same_input(x, y):
    for name in ("keys", "weights", "starts", "num_tokens", "num_blocks", "hit_cap"):
        assert np.array_equal(getattr(x, name), getattr(y, name)), name
    assert x.num_keys == y.num_keys and x.rule == y.rule


def _write(tmp_path, rows, name="t.jsonl", extra_lines=()):
    p = tmp_path / name
    p.write_text("".join(extra_lines) + "".join(
        (r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(p)


def _req(ts, n, ids, out=10):
    return {"timestamp": ts, "input_length": n, "output_length": out, "hash_ids": ids}


@pytest.mark.parametrize("rule", ["trace", "vllm"])
def test_conversation_trace_same_input_and_curve(rule):
    path = str(CONVERSATION)
    _same_input(_fast(path, rule), _slow(path, rule))
    opts = CurveOptions(rule=rule, warmup=0.5, capacities=[6, 64, 640, 6400, 64000])
    fast = compute_curve(path, opts)                          # the whole-file reader
    slow = compute_curve(path, opts, trace=read_trace(path))  # per-line reader
    assert fast.to_dict() == slow.to_dict()
    if rule == "trace":
        assert [round(p.hit_rate, 4) for p in fast.points] == [0.0454, 0.0454, 0.0458,
                                                                0.1497, 0.3836]


def test_arrival_order_blank_and_comment_lines_gzip(tmp_path):
    # Out of order timestamps (ties keep file order), floats and ints mixed, a blank line and a
    # comment: requests are reordered with their ids exactly as the per-line reader does.
    rows = [_req(5, 1000, [0, 1]), _req(0, 600, [0, 2]), "", "# note",
            _req(5.0, 513, [0, 1]), _req(1.5, 1600, [0, 1, 3, 4])]
    path = _write(tmp_path, rows)
    a = read_hash_id_trace(path)
    assert a.num_tokens.tolist() == [600, 1600, 1000, 513]
    assert a.lens.tolist() == [2, 4, 2, 2]
    assert a.ids.tolist() == [0, 2, 0, 1, 3, 4, 0, 1, 0, 1]
    for rule in ("trace", "vllm"):
        _same_input(_fast(path, rule), _slow(path, rule))
    gz = tmp_path / "t.jsonl.gz"
    gz.write_bytes(gzip.compress(Path(path).read_bytes()))
    assert read_hash_id_trace(str(gz)).ids.tolist() == a.ids.tolist()


@pytest.mark.parametrize("row", [
    {"config": {"block_size": 16}},                             # a config line
    {**_req(0, 600, [0, 2]), "id": "x"},                        # another field
    {**_req(0, 600, [0, 2]), "block_size": 512},
    _req(0, 600.0, [0, 2]),                                     # float length (accepted there)
    _req(0, True, [0]),                                         # a bool
    _req(None, 600, [0, 2]),                                    # null timestamp (default 0)
    _req(-1, 600, [0, 2]),                                      # negative timestamp
    _req(0, 600, [0, "2"]),                                     # a string id
    _req(0, 600, [0, [2]]),                                     # a nested list
    _req(0, 600, [0, -2]),                                      # a negative id
    _req(0, 600, [0, 1 << 64]),                                 # beyond int64
    _req(0, 600, [0]),                                          # too few ids
    _req(0, 0, []),                                             # input_length 0
    json.dumps(_req(0, 600, [0, 2])) + "," + json.dumps(_req(0, 600, [0, 2])),  # two a line
    '{"timestamp": 0, "input_length": 600',                     # malformed
    "[1, 2]",
])
def test_anything_unusual_goes_to_the_full_reader(tmp_path, row):
    path = _write(tmp_path, [_req(0, 600, [0, 1]), row, _req(1, 600, [0, 1])])
    assert read_hash_id_trace(path) is None


def test_stdin_and_missing_file_go_to_the_full_reader(tmp_path):
    assert read_hash_id_trace("-") is None
    assert read_hash_id_trace(str(tmp_path / "nope.jsonl")) is None


def test_ids_with_two_parents_fall_back_to_interning(tmp_path):
    # Id 7 follows 0 in one request and 1 in another: ids do not name prefixes; the curve must
    # then key blocks by their chain (slow path), and still agree with it.
    path = _write(tmp_path, [_req(0, 1024, [0, 7]), _req(1, 1024, [1, 7]),
                             _req(2, 1024, [0, 7])])
    a = read_hash_id_trace(path)
    assert chained_input(a.ids, a.lens, a.num_tokens, "trace", 512) is None
    res = compute_curve(path, CurveOptions(rule="trace", capacities=[1, 2, 3, 4]))
    # Stack before request 3 (heads touched last): (1), (1,7), (0), (0,7). Its block (0) is at
    # distance 2 and (0,7) at 3: 512 tokens hit at capacity 3, 1024 at 4. Keyed by the bare id,
    # 7 would sit at distance 1 and request 3 would hit 1024 tokens at capacity 3.
    assert [p.hit_tokens for p in res.points] == [0, 0, 512, 1024]


def test_bad_line_still_named_by_the_cli(tmp_path):
    path = _write(tmp_path, [_req(0, 600, [0, 1]), _req(1, 600, [0, 1]), _req(2, 600, [0])])
    res = runner.invoke(app, ["curve", path, "--rule", "trace", "--json"])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.strip() == (f"error: {path}:3: field 'hash_ids': has 1 ids but "
                                  "input_length 600 needs ceil(600/512) = 2")


def test_block_size_constant_is_the_trace_readers():
    from kvcore.analysis.curve.fastread import MOONCAKE_BLOCK
    from kvcore.traces.formats import MOONCAKE_BLOCK as READER_BLOCK

    assert MOONCAKE_BLOCK == READER_BLOCK


def test_stable_order_equals_a_stable_argsort():
    from kvcore.analysis.curve.input import stable_order

    rng = np.random.default_rng(7)
    for keys in (rng.integers(0, 50, 1000), rng.integers(0, 1 << 40, 1000),
                 np.array([3, 1, 3, 0, 1, 3]), np.array([5, -1, 5, 2]),   # negative: fallback
                 np.array([1 << 61, 0, 1 << 61]), np.zeros(0, dtype=np.int64)):
        assert stable_order(keys).tolist() == np.argsort(keys, kind="stable").tolist()


def test_curve_reads_the_config_lines_block_size_as_replay_does(tmp_path):
    """A config line's block_size 8: the curve ran at the hash ids' 16 where `kvcli replay
    --mode cache --num-blocks 41` runs at 8; now both at 8 (--block-size still wins)."""
    import json as _json

    from typer.testing import CliRunner

    from kvcli.app import app

    runner = CliRunner()
    rows = [{"timestamp": i, "input_length": 96, "output_length": 1, "block_size": 16,
             "hash_ids": [i % 3, 100 + i, 200 + i, 300 + i, 400 + i, 500 + i]}
            for i in range(30)]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(_json.dumps(x) for x in [{"config": {"block_size": 8}}, *rows]))
    curve = _json.loads(runner.invoke(app, ["curve", str(path), "--capacities", "40",
                                            "--json"]).stdout)
    replay = _json.loads(runner.invoke(app, ["replay", str(path), "--mode", "cache",
                                             "--num-blocks", "41", "--json"]).stdout)
    assert curve["block_size"] == replay["block_size"] == 8
    assert curve["points"][0]["hit_tokens"] == replay["hit_tokens"]
    flag = _json.loads(runner.invoke(app, ["curve", str(path), "--capacities", "40",
                                           "--block-size", "16", "--json"]).stdout)
    assert flag["block_size"] == 16
    path.write_text("\n".join(_json.dumps(x) for x in [
        {"config": {"enable_prefix_caching": False}}, *rows]))
    r = runner.invoke(app, ["curve", str(path)])
    assert r.exit_code == 2 and "field 'config.enable_prefix_caching'" in r.stderr


def test_the_ceiling_capacity_is_one_a_replay_reaches(tmp_path):
    """A block-aligned prompt repeated while cached (the one pass is exact for no capacity of
    this trace): it said "reached at 3 blocks" and swept no further, where a replay at 3 hits
    16 tokens and at 4 the ceiling's 32; the sweep now goes on and finds 4."""
    import json as _json

    from typer.testing import CliRunner

    from kvcli.app import app

    rows = [{"timestamp": 0, "input_length": 38, "output_length": 1, "block_size": 16,
             "hash_ids": [7, 1, 6]},
            {"timestamp": 1, "input_length": 16, "output_length": 1, "block_size": 16,
             "hash_ids": [18]},
            {"timestamp": 2, "input_length": 16, "output_length": 1, "block_size": 16,
             "hash_ids": [18]},
            {"timestamp": 3, "input_length": 48, "output_length": 1, "block_size": 16,
             "hash_ids": [7, 1, 6]}]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(_json.dumps(x) for x in rows))
    r = CliRunner().invoke(app, ["curve", str(path), "--json"])
    doc = _json.loads(r.stdout)
    hits = {p["capacity_blocks"]: p["hit_tokens"] for p in doc["points"]}
    assert (hits[3], hits[4]) == (16, 32) and doc["ceiling_capacity_blocks"] == 4
    r = CliRunner().invoke(app, ["curve", str(path), "--capacities", "3"])
    assert "not reached at the LRU capacities evaluated" in r.stdout
    assert "exact for no capacity of this trace" in r.stdout


def test_a_config_lines_key_is_refused_with_block_size_given_too(tmp_path):
    """The config-line check ran only when --block-size was not given: with it, prefix caching
    off gave a 58.9% one-pass ceiling beside 0% replayed points."""
    import json as _json

    from typer.testing import CliRunner

    from kvcli.app import app

    rows = [{"config": {"block_size": 16, "enable_prefix_caching": False}}] + [
        {"timestamp": i, "input_length": 48, "output_length": 1, "block_size": 16,
         "hash_ids": [i % 2, 10 + i % 2, 20 + i]} for i in range(10)]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(_json.dumps(x) for x in rows))
    r = CliRunner().invoke(app, ["curve", str(path), "--block-size", "16"])
    assert r.exit_code == 2 and "field 'config.enable_prefix_caching'" in r.stderr
