"""A fifth hostile campaign. A chart `--plot DIR` writes (`DIR/cluster.png`, `DIR/curve.png`,
stats' `DIR/usage.png` ..., `DIR/sweep-OPTION.png`) on an input or another output: it replaced
that file with a PNG, exit 0 (`kvcli sweep --results D/sweep-num_blocks.png --plot D` lost the
results; `kvcli sweep report D/sweep-num_blocks.png --plot D` too). Refused before the work."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_hostile_options import refused

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
SP = ROOT / "traces" / "shared-prefix.jsonl"


def test_a_sweeps_results_named_as_its_chart_are_refused(tmp_path):
    results = tmp_path / "sweep-num_blocks.png"
    refused(["sweep", "--trace", str(SP), "--set", "num_blocks=300,400", "--results",
             str(results), "--plot", str(tmp_path)],
            f"error: option --plot: {results} is also --results's output: one would replace "
            "the other")
    assert not results.exists()


def test_a_sweep_report_on_its_chart_is_refused(tmp_path):
    from typer.testing import CliRunner

    from kvcli.app import app

    made = tmp_path / "r.jsonl"
    res = CliRunner().invoke(app, ["sweep", "--trace", str(SP), "--set", "num_blocks=300,400",
                                   "--results", str(made), "--jobs", "1", "--json"])
    assert res.exit_code == 0, res.output
    results = tmp_path / "sweep-num_blocks.png"
    made.rename(results)
    before = results.read_bytes()
    refused(["sweep", "report", str(results), "--plot", str(tmp_path)],
            f"error: option --plot: {results} is the results file, which this run reads: "
            "writing it would replace it")
    assert results.read_bytes() == before


def test_cluster_decisions_named_as_its_chart_are_refused(tmp_path):
    out = tmp_path / "cluster.png"
    refused(["cluster", str(SP), "--num-blocks", "300", "--plot", str(tmp_path),
             "--decisions", str(out)],
            f"error: option --plot: {out} is also --decisions's output: one would replace the "
            "other")
    assert not out.exists()


@pytest.mark.parametrize("command, name", [("curve", "curve.png"), ("stats", "usage.png"),
                                           ("stats", "latency.png")])
def test_a_trace_named_as_a_chart_is_refused(tmp_path, command, name):
    trace = tmp_path / name
    shutil.copy(SP, trace)
    refused([command, str(trace), "--plot", str(tmp_path)],
            f"error: option --plot: {trace} is the trace, which this run reads: writing it "
            "would replace it")
    assert trace.read_bytes() == SP.read_bytes()


def test_the_stats_charts_are_the_ones_named(tmp_path):
    from typer.testing import CliRunner

    from kvcli.app import app
    from kvcli.plots import STATS_CHARTS

    res = CliRunner().invoke(app, ["stats", str(SP), "--num-blocks", "300", "--plot",
                                   str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    assert {p.name for p in tmp_path.iterdir()} == set(STATS_CHARTS)


@pytest.mark.parametrize("kind", [[1], {}, ["admit"]])
def test_an_event_kind_that_is_no_string(tmp_path, kind):
    """`kind` a list or an object: unhashable, the stats reader's dispatch (and the field
    check after it) was a TypeError traceback, exit 1."""
    import json

    from typer.testing import CliRunner

    from kvcli.app import app

    stream = tmp_path / "events.jsonl"
    res = CliRunner().invoke(app, ["replay", str(SP), "--num-blocks", "300", "--events",
                                   str(stream), "--json"])
    assert res.exit_code == 0, res.output
    lines = stream.read_text().splitlines()
    ev = json.loads(lines[3])
    lines[3] = json.dumps({**ev, "kind": kind})
    stream.write_text("\n".join(lines) + "\n")
    refused(["stats", str(stream)],
            f"error: {stream}:4: field 'kind': unknown event kind {kind!r}")


@pytest.mark.parametrize("command", ["script", "replay"])
def test_a_group_type_that_is_no_string(tmp_path, command):
    """`groups: [{"type": ["full"]}]` in an op script's or a trace's config line: the group
    registry looked the list up (unhashable): a TypeError traceback, exit 1."""
    import json

    line = (json.dumps({"op": "new", "id": "a", "prompt": [1, 2, 3]}) if command == "script"
            else json.dumps({"timestamp": 0, "input_length": 40, "output_length": 5,
                             "hash_ids": [1, 2, 3], "block_size": 16}))
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"config": {"groups": [{"type": ["full"]}], "block_size": 4,
                                           "num_blocks": 64}}) + "\n" + line + "\n")
    refused([command, str(path)], f"error: {path}:1: field ",
            "unknown group type ['full'] (known: full, mla, sliding_window, chunked_local, mamba, "
            "circular_buffer, rswa, sink_full, or the names an event header gives them)")


def test_a_router_weight_that_overflows_its_score_is_refused():
    """llmd's weights at 1e308 (finite, accepted) scored every replica inf: it routed otherwise
    than at weights 1, which rank the replicas the same, exit 0 (a quiet wrong answer)."""
    from kvcore.cluster.router import MAX_FLOAT_OPTION

    args = ["cluster", str(SP), "--num-blocks", "300", "--router", "llmd"]
    refused([*args, "--router-opt", "queue_weight=1e308"],
            "error: option --router-opt: router llmd option queue_weight: must be at most 1e15 "
            "in size, got '1e308'")
    assert MAX_FLOAT_OPTION == 1e15
    from typer.testing import CliRunner

    from kvcli.app import app

    res = CliRunner().invoke(app, [*args, "--router-opt", "queue_weight=1e15", "--json"])
    assert res.exit_code == 0, res.output
