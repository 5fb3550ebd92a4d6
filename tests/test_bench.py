"""`kvcli bench`: the generated workload is the oracle's bench-2000 file, op for op, and replaying
it gives vLLM 0.33's totals (oracle README). No timing is asserted (speed lives in
benchmarks/bench_vs_vllm.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app
from kvcore.bench_workload import BENCH_CONFIG, bench_ops, run_bench
from kvcore.script import load_script, parse_config

BENCH_FILE = Path(__file__).resolve().parents[1].parent / "shared" / "oracle" / \
    "bench-2000.ops.jsonl.gz"


def test_generated_workload_is_the_shared_file():
    lines = gzip.decompress(BENCH_FILE.read_bytes()).decode().splitlines()
    assert json.loads(lines[0]) == {"config": BENCH_CONFIG}
    ops = bench_ops(2000)
    assert len(ops) == len(lines) - 1 == 20000
    assert all(json.loads(line) == op for line, op in zip(lines[1:], ops))


def test_bench_2000_totals_equal_vllm():
    cfg, op_list = load_script(str(BENCH_FILE))
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
    cases = BENCH_FILE.parent / "cases"
    cfg, op_list = load_script(str(cases / "full-3.ops.jsonl"))
    r = run_bench(cfg, [o.data for o in op_list])
    summary = json.loads((cases / "full-3.expected.jsonl").read_text().splitlines()[-1])
    assert (r.queries, r.hits) == (summary["prefix_cache_stats"]["queries"],
                                   summary["prefix_cache_stats"]["hits"])
    assert r.allocated_blocks == summary["totals"]["blocks_allocated"]
    assert r.rejected == summary["totals"]["rejected"]
    assert (r.free_blocks, r.cached_hashes) == (summary["free_blocks"],
                                                summary["cached_block_hashes"])
