"""A linear clock the user set is not kvcli's default guess, even with the defaults spelt out
(`--clock linear:5,0.05,0.25`, `--step-overhead-ms 5`): no "uncalibrated clock" warning, and
the summary, the stream header, `kvcli stats`, `kvcli cluster` and `kvcli sweep` all say so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcore.clock.registry import make_clock
from kvcore.engine.cost import CostModel
from kvcore.engine.options import ReplayOptions

runner = CliRunner()
ABC = [{"timestamp": 0, "input_length": 100, "output_length": 3},
       {"timestamp": 10, "input_length": 40, "output_length": 2}]
SPELT_OUT = [["--clock", "linear:5,0.05,0.25"], ["--step-overhead-ms", "5"],
             ["--decode-ms-per-seq", "0.25", "--prefill-ms-per-token", "0.05"]]


def _trace(tmp_path: Path) -> str:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ABC))
    return str(path)


def _app():
    from kvcli.app import app

    return app


def test_the_clock_remembers_it_was_set() -> None:
    assert CostModel().uncalibrated and not CostModel(user_set=True).uncalibrated
    assert CostModel(user_set=True).describe()["source"] == "given by the user"
    assert make_clock(ReplayOptions()).uncalibrated
    for given in ({"clock": "linear:5,0.05,0.25"}, {"step_overhead_ms": 5.0}):
        clock = make_clock(ReplayOptions(**given, given=frozenset(given)))   # type: ignore[arg-type]
        assert clock == CostModel(user_set=True) and not clock.uncalibrated
    # the same numbers, not given (a library caller's defaults): the guess
    assert make_clock(ReplayOptions(step_overhead_ms=5.0, given=frozenset())).uncalibrated


@pytest.mark.parametrize("flags", SPELT_OUT, ids=["clock", "step", "two-steps"])
def test_replay_and_stats_say_the_user_set_it(tmp_path: Path, flags: list[str]) -> None:
    trace, ev = _trace(tmp_path), tmp_path / "ev.jsonl"
    res = runner.invoke(_app(), ["replay", trace, "--json", "--events", str(ev), *flags])
    assert res.exit_code == 0, res.output
    assert res.stderr == "" and json.loads(res.stdout)["latency"]["uncalibrated"] is False
    assert json.loads(ev.read_text().splitlines()[0])["uncalibrated_clock"] is False
    for source in ([str(ev)], [trace, *flags]):
        st = runner.invoke(_app(), ["stats", *source, "--json"])
        assert st.exit_code == 0, st.output
        assert json.loads(st.stdout)["latency"]["uncalibrated"] is False
    # the default itself still warns and is labelled
    res = runner.invoke(_app(), ["replay", trace, "--json"])
    assert res.stderr.startswith("warning: uncalibrated clock: ")
    assert json.loads(res.stdout)["latency"]["uncalibrated"] is True


def test_cluster_and_sweep_say_the_user_set_it(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    res = runner.invoke(_app(), ["cluster", trace, "--replicas", "2", "--json",
                                 "--clock", "linear:5,0.05,0.25"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert res.stderr == "" and doc["warnings"] == []
    assert doc["routers"][0]["latency"]["uncalibrated"] is False
    res = runner.invoke(_app(), ["cluster", trace, "--replicas", "2", "--json"])
    assert json.loads(res.stdout)["routers"][0]["latency"]["uncalibrated"] is True
    # a sweep: the job that sets 5 ms is the user's clock, the one that sets nothing the guess
    out = tmp_path / "r.jsonl"
    res = runner.invoke(_app(), ["sweep", "--trace", trace, "--set", "block_size=16,32",
                                 "--set", "step_overhead_ms=5", "--jobs", "1",
                                 "--results", str(out)])
    assert res.exit_code == 0, res.output
    assert "uncalibrated" not in res.stderr
