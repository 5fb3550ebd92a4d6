"""Two Ctrl-Cs a few ms apart while a replay with `--metrics` ends: the snapshot file still gets
its last snapshot and its ``# kvcli interrupted`` line (the second signal is held while the
outputs' last records run, the metrics file's with them; it fired before the file was ended,
which then looked like a complete run's)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

pytest.importorskip("prometheus_client")

SAMPLE = str(Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl")


def first_ctrl_c_at_step(monkeypatch, n: int) -> None:
    """Ctrl-C as the `n`th engine step's batch reaches the live run (`LiveRun.step` is pure
    Python in both builds)."""
    from kvcore.live.session import LiveRun

    real = LiveRun.step
    calls = [0]

    def step(self, rank, ts_s, events, file):
        calls[0] += 1
        if calls[0] == n:
            raise KeyboardInterrupt
        real(self, rank, ts_s, events, file)

    monkeypatch.setattr(LiveRun, "step", step)


def second_ctrl_c_in(monkeypatch, module, ended: list) -> None:
    """Ctrl-C again as `module`'s `finish_outputs` (the outputs' last records) starts."""
    real = module.finish_outputs

    def finish(ctx):
        if not ended:
            os.kill(os.getpid(), signal.SIGINT)
        real(ctx)
        ended.append(ctx)

    monkeypatch.setattr(module, "finish_outputs", finish)


def tail(path: Path) -> tuple[str, str]:
    lines = path.read_text().splitlines()
    stamps = [x for x in lines if x.startswith("# kvcli snapshot sim_time_s=")]
    return stamps[-1], lines[-1]


def test_a_second_ctrl_c_as_a_replay_ends_still_ends_its_metrics_file(tmp_path, monkeypatch):
    import kvcore.engine.replay as replay_module

    first_ctrl_c_at_step(monkeypatch, 40)
    ended: list = []
    second_ctrl_c_in(monkeypatch, replay_module, ended)
    metrics, steps = tmp_path / "m.prom", tmp_path / "steps.jsonl"
    res = CliRunner().invoke(app, ["replay", SAMPLE, "--metrics", str(metrics),
                                   "--metrics-interval-s", "0.05", "--steps", str(steps)])
    assert res.exit_code == 130 and len(ended) == 1
    assert steps.read_text().splitlines()[-1].startswith('{"interrupted"')
    last_snapshot, last = tail(metrics)
    # the run stopped at its 40th step: the file's last snapshot is that moment's, then the line
    assert last == "# kvcli interrupted " + last_snapshot.removeprefix("# kvcli snapshot ")
    assert float(last_snapshot.split("=")[1]) > 0


def test_a_second_ctrl_c_as_a_cluster_ends_still_ends_its_metrics_file(tmp_path, monkeypatch):
    import kvcore.cluster.run as cluster_module

    first_ctrl_c_at_step(monkeypatch, 40)
    ended: list = []
    second_ctrl_c_in(monkeypatch, cluster_module, ended)
    metrics = tmp_path / "m.prom"
    res = CliRunner().invoke(app, ["cluster", SAMPLE, "--replicas", "2", "--metrics",
                                   str(metrics), "--metrics-interval-s", "0.05"])
    assert res.exit_code == 130 and len(ended) == 2
    last_snapshot, last = tail(metrics)
    assert last == "# kvcli interrupted " + last_snapshot.removeprefix("# kvcli snapshot ")
