"""A signal in the last moment of a run never cuts a file: `kvcore.interrupts.deferred` holds
it while the outputs' last records and the rename run, and delivers it after."""

import gzip
import json
import os
import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.interrupts import deferred

SAMPLE = str(Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl")


def test_a_signal_is_held_to_the_end_of_the_block_then_delivered():
    def raising(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, raising)
    try:
        done = []
        with pytest.raises(KeyboardInterrupt), deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            done.append("after the signal")
            with deferred():                 # nested: the outer one holds
                done.append("inner")
        assert done == ["after the signal", "inner"]
        assert signal.getsignal(signal.SIGTERM) is raising       # put back
        with deferred():
            pass                                 # nothing came: nothing raised
    finally:
        signal.signal(signal.SIGTERM, old)


def test_ctrl_c_while_the_replay_writes_its_last_records_leaves_whole_files(tmp_path,
                                                                            monkeypatch):
    from kvcore.engine.request_book import RequestBook

    real = RequestBook.write_lines

    def interrupted_midway(self, interrupted, unreached=()):
        os.kill(os.getpid(), signal.SIGINT)      # Ctrl-C as the last request lines start
        real(self, interrupted, unreached)

    monkeypatch.setattr(RequestBook, "write_lines", interrupted_midway)
    ev, req = tmp_path / "ev.jsonl.gz", tmp_path / "req.jsonl"
    res = CliRunner().invoke(app, ["replay", SAMPLE, "--events", str(ev), "--requests",
                                   str(req), "--mode", "cache"])
    assert res.exit_code == 130                   # the Ctrl-C is not lost ...
    lines = req.read_text().splitlines()          # ... and cut nothing
    assert len(lines) == 294 and all(json.loads(x)["id"] for x in lines)
    last = json.loads(gzip.decompress(ev.read_bytes()).splitlines()[-1])
    assert last["kind"] == "end" and last["summary"]["requests"] == 294
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ev.jsonl.gz", "req.jsonl"]


def test_a_second_ctrl_c_while_a_cluster_winds_down_still_ends_every_replicas_stream(
        tmp_path, monkeypatch):
    import kvcore.cluster.run as cluster_run
    from kvcore.cluster.loop import ClusterLoop

    def first_ctrl_c(self):
        raise KeyboardInterrupt                   # the run is stopped before any request

    real = cluster_run.finish_outputs
    finished = []

    def second_ctrl_c(ctx):
        if len(finished) == 1:
            os.kill(os.getpid(), signal.SIGINT)   # Ctrl-C again as replica 1's records start
        real(ctx)
        finished.append(ctx)

    monkeypatch.setattr(ClusterLoop, "run", first_ctrl_c)
    monkeypatch.setattr(cluster_run, "finish_outputs", second_ctrl_c)
    res = CliRunner().invoke(app, ["cluster", SAMPLE, "--replicas", "4", "--events",
                                   str(tmp_path / "ev")])
    assert res.exit_code == 130 and len(finished) == 4
    folder = tmp_path / "ev" / "round_robin"
    for k in range(4):
        kinds = [json.loads(x)["kind"]
                 for x in (folder / f"replica-{k}.events.jsonl").read_text().splitlines()]
        assert kinds == ["header", "interrupted"], k
