"""Options of bench, clock, calibrate, script, events, config and gen probed with and without
(and with odd values): each finding was accepted and silently did nothing, or failed with a
line naming no option; each is now a warning or one line `error: option --X: ...`, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
OPS = str(ROOT / "tests" / "data" / "oracle_cases" / "full-1.ops.jsonl")
GEOMETRY = ["--layers", "4", "--kv-heads", "1", "--head-dim", "8"]
runner = CliRunner()
EMPTY = "must be a non-empty name or path, got ''"


def refused(args: list[str], line: str) -> None:
    res = runner.invoke(app, args)
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert res.stdout == "" and res.stderr == line + "\n", res.stderr


def test_an_empty_op_script_path():
    # both said "error: : no such file", naming neither the option nor a file
    refused(["bench", "--ops", ""], "error: option --ops: an empty path")
    refused(["script", ""], "error: argument OPS: an empty path")


@pytest.mark.parametrize("flag", ["--trace", "--model", "--cases"])
def test_bench_gpu_empty_names(flag):
    # '' was "none given": the shipped tables, the default heads or every case were timed
    # (refused before the GPU is looked for: exit 2 on any machine)
    refused(["bench", "--gpu", flag, ""], f"error: option {flag}: {EMPTY}")


def test_bench_gpu_device_cpu_needs_a_trace():
    # it warned "no effect without --trace", then timed the shipped tables on CUDA
    refused(["bench", "--gpu", "--device", "cpu"],
            "error: option --device: cpu runs only the replay-driven decode (give --trace); "
            "the shipped tables are timed on CUDA")


@pytest.mark.parametrize(("args", "flag"), [
    (["--model", "", "--model-config", "cfg.json"], "--model"),
    (["--model-config", "", "--model", "llama-3.1-8b"], "--model-config"),
    (["--model", "llama-3.1-8b", "--calibration", ""], "--calibration"),
    (["--model", "llama-3.1-8b", "--gpu", ""], "--gpu"),
])
def test_clock_explain_empty_names(args, flag):
    # --calibration '' timed the roofline clock; --model '' beside a config.json ran on it
    refused(["clock", "explain", "--case", "decode=1", "--gpu", "h100", *args],
            f"error: option {flag}: {EMPTY}")


@pytest.mark.parametrize(("args", "flag"), [
    (["--model", "", "--model-config", "cfg.json"], "--model"),
    (["--model-config", "", "--model", "llama-3.1-8b"], "--model-config"),
])
def test_calibrate_empty_names(args, flag):
    refused(["calibrate", "--gpu", "-o", "cal.json", *args], f"error: option {flag}: {EMPTY}")


def test_an_empty_model_config():
    # said "error: : no such file" (config, script)
    refused(["config", "--model-config", ""], f"error: option --model-config: {EMPTY}")
    refused(["script", OPS, "--model-config", ""], f"error: option --model-config: {EMPTY}")
    refused(["config", ""], f"error: argument MODEL: {EMPTY}")


@pytest.mark.parametrize(("size", "layers"), [("--sliding-window", "--sliding-layers"),
                                              ("--attention-chunk-size", "--chunked-layers")])
def test_an_empty_layer_selection(size, layers):
    # '' was read as unset: every layer sliding (chunked), the same table as without it
    line = (f"error: option {layers}: expected a pattern like 5:1 or layer indices like "
            "0,2,4-9 below 4, got ''")
    refused(["config", *GEOMETRY, "--gpu-memory-gib", "1", "--weights-gib", "0", size, "8",
             layers, ""], line)
    refused(["script", OPS, *GEOMETRY, size, "8", layers, ""], line)


def test_b2b_fresh_queries_with_one_query_a_user():
    # each user sends one query: fresh and repeat made the same trace, unsaid
    base = ["gen", "b2b", "--tenants", "10", "--users", "3"]
    repeat = runner.invoke(app, [*base, "--requests", "30"])
    fresh = runner.invoke(app, [*base, "--requests", "30", "--queries", "fresh"])
    assert fresh.exit_code == 0 and fresh.stdout == repeat.stdout
    assert fresh.stderr == ("warning: option --queries fresh: no effect with --requests 30 at "
                            "most --tenants x --users (30): each user sends one query, so fresh "
                            "and repeat make the same trace\n")
    more = runner.invoke(app, [*base, "--requests", "31", "--queries", "fresh"])
    assert more.exit_code == 0 and more.stderr == ""
    assert more.stdout != runner.invoke(app, [*base, "--requests", "31"]).stdout


@pytest.mark.pure_python       # (call trees patch the pure stack's methods: test_call_tree.py)
def test_calls_depth_five_is_the_free_queue():
    # --help listed 1 to 4; 5 adds the free queue, the whole tree
    res = runner.invoke(app, ["script", "--help"], env={"COLUMNS": "400"})
    assert "4 + the block pool, 5 + its free queue" in res.stdout
    small = str(ROOT / "traces" / "four-paths.ops.jsonl")
    tree = [runner.invoke(app, ["script", small, "--calls", "--json", *d]).stdout
            for d in ([], ["--calls-depth", "5"], ["--calls-depth", "4"])]
    assert tree[0] == tree[1] != tree[2]
