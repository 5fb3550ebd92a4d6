"""`kvcli bench`: the generated workload is the oracle's bench-2000 file, op for op, and replaying
it gives vLLM 0.33's totals (oracle README). No timing is asserted (speed lives in
benchmarks/bench_vs_vllm.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.bench_workload import BENCH_CONFIG, bench_ops, run_bench
from kvcore.engine.op_script import load_script, parse_config

CASES = Path(__file__).resolve().parent / "data" / "oracle_cases"
# The oracle's bench-2000.ops.jsonl.gz (7 MB, not copied here): sha256 of its decompressed bytes,
# 21,312,256 bytes, one json.dumps line per op after the config line.
BENCH_SHA256 = "545e961e35132e19d1e109edc8d747e01e8c2b1da6beca298950f892397dbdf3"


def _bench_bytes() -> bytes:
    lines = [{"config": BENCH_CONFIG}, *bench_ops(2000)]
    return "".join(json.dumps(x) + "\n" for x in lines).encode()


def test_generated_workload_is_the_oracle_file():
    raw = _bench_bytes()
    assert len(raw) == 21_312_256 and raw.count(b"\n") == 1 + 20000
    assert hashlib.sha256(raw).hexdigest() == BENCH_SHA256


def test_bench_2000_totals_equal_vllm(tmp_path):
    path = tmp_path / "bench-2000.ops.jsonl"
    path.write_bytes(_bench_bytes())
    cfg, op_list = load_script(str(path))
    r = run_bench(cfg, [o.data for o in op_list])
    assert (r.requests, r.decodes, r.frees, r.rejected) == (2000, 16000, 2000, 0)
    assert r.queries == 3_068_063 and r.hits == 1_132_400
    assert r.allocated_blocks == 122_920 and r.hit_blocks == 70_775
    assert r.free_blocks == 16_383 and r.cached_hashes == 16_352
    assert r.seconds_manager > 0 and r.seconds_total > r.seconds_manager


def test_cli_json_keys():
    res = CliRunner().invoke(app, ["bench", "--json", "--n", "40"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    for key in ("requests", "seconds_manager", "seconds_total", "queries", "hits",
                "allocated_blocks", "free_blocks", "cached_hashes", "requests_per_second_manager"):
        assert key in data
    # The same 40 requests replayed directly give the same totals.
    r = run_bench(parse_config(BENCH_CONFIG, "x", 1), bench_ops(40))
    assert (data["requests"], data["queries"], data["hits"], data["allocated_blocks"]) == \
        (40, r.queries, r.hits, r.allocated_blocks)


def test_cli_human_output_shows_totals():
    res = CliRunner().invoke(app, ["bench", "--n", "20"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "manager calls" in res.stdout and "cached hashes" in res.stdout


def test_gpu_without_a_device_exits_3():
    res = CliRunner().invoke(app, ["bench", "--gpu"])
    assert res.exit_code in (0, 3)  # 0 only where a GPU and torch are present
    if res.exit_code == 3:
        assert res.stderr.startswith("error:")


def test_bench_on_a_recorded_case_matches_the_oracle_summary():
    """Chunked admissions, prefill steps, refusals and a refused decode: the same totals as
    the oracle's summary of that case."""
    cfg, op_list = load_script(str(CASES / "full-3.ops.jsonl"))
    r = run_bench(cfg, [o.data for o in op_list])
    summary = json.loads((CASES / "full-3.expected.jsonl").read_text().splitlines()[-1])
    assert (r.queries, r.hits) == (summary["prefix_cache_stats"]["queries"],
                                   summary["prefix_cache_stats"]["hits"])
    assert r.allocated_blocks == summary["totals"]["blocks_allocated"]
    assert r.rejected == summary["totals"]["rejected"]
    assert (r.free_blocks, r.cached_hashes) == (summary["free_blocks"],
                                                summary["cached_block_hashes"])


def test_workload_options_with_ops_are_named_not_dropped():
    """--n and --seed shape the generated workload: with --ops they did nothing, unsaid."""
    ops = str(CASES / "full-3.ops.jsonl")
    res = CliRunner().invoke(app, ["bench", "--ops", ops, "--n", "40", "--seed", "7", "--json"])
    assert res.exit_code == 0, res.output
    assert res.stderr == ("warning: option(s) --n, --seed: no effect with --ops (they shape "
                          "the generated workload)\n")
    assert json.loads(res.stdout)["workload"] == ops
    res = CliRunner().invoke(app, ["bench", "--ops", ops, "--json"])
    assert res.exit_code == 0 and res.stderr == ""
    # the defaults still shape the generated workload when neither is given
    res = CliRunner().invoke(app, ["bench", "--n", "30", "--json"])
    assert json.loads(res.stdout)["workload"] == "generated: 30 requests, seed 1234"


def test_a_script_without_requests_is_nothing_to_time(tmp_path):
    # (it printed 0 requests/s and a hit rate of 0.0: 0/0 shown as measured)
    path = tmp_path / "sum.ops.jsonl"
    path.write_text('{"config": {"num_blocks": 64, "block_size": 16}}\n{"op": "summary"}\n')
    r = CliRunner().invoke(app, ["bench", "--ops", str(path), "--json"])
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == f"error: {path}: no request to time: the script allocates none\n"
