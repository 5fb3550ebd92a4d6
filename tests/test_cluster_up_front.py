"""`kvcli cluster` refuses what its options alone decide before it builds a replica: the
refusals made while the replicas were built came after all of them (40,000 replicas in cache
mode with --metrics: ~5 s to the one line). The build is replaced by a guard that fails the
test, so a refusal made only there fails it."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
CHAT = str(ROOT / "traces" / "multiturn-chat.jsonl")
runner = CliRunner()


def _no_build(monkeypatch) -> None:
    from kvcore.cluster import run

    def built(*_a, **_k):
        raise AssertionError("the replicas were built")

    monkeypatch.setattr(run, "build_loop", built)


def test_metrics_in_cache_mode_are_refused_before_any_replica_is_built(monkeypatch, tmp_path):
    _no_build(monkeypatch)
    out = tmp_path / "m.prom"
    r = runner.invoke(app, ["cluster", CHAT, "--replicas", "40000", "--num-blocks", "64",
                            "--mode", "cache", "--metrics", str(out)])
    assert r.exit_code == 2, r.output
    assert r.stderr == ("error: option --metrics: engine mode only: cache mode runs no "
                        "scheduler and no steps for vLLM's metrics to measure\n")
    assert not out.exists()


def test_too_many_metrics_snapshots_are_refused_before_any_replica_is_built(
        monkeypatch, tmp_path):
    _no_build(monkeypatch)
    trace = tmp_path / "far.jsonl"
    req = {"prompt_token_ids": [1, 2, 3, 4, 5], "output_length": 3}
    trace.write_text(json.dumps(dict(req, timestamp=0)) + "\n"
                     + json.dumps(dict(req, timestamp=1e9)) + "\n")
    out = tmp_path / "m.prom"
    r = runner.invoke(app, ["cluster", str(trace), "--replicas", "4", "--metrics", str(out)])
    assert r.exit_code == 2, r.output
    assert r.stderr == (
        "error: option --metrics-interval-s: 100,000 snapshots up to the trace's last arrival "
        "(1,000,000 s of simulated time) is more than the limit of 25,000 (~120 KB each, "
        "4 engines): raise it\n")
    assert not out.exists()
