"""`kvcli sweep --executor ray` on a local Ray the sweep starts and stops: byte for byte the
local executor's results. CI installs the `ray` extra (`make install`); without Ray the test
skips, saying so. One Ray start (15-20 s on a loaded 2-core machine), a 4-job grid; it runs in
the pure-Python pass of `make test` only (the compiled pass would only start Ray again)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
CHAT = str(ROOT / "traces" / "multiturn-chat.jsonl")

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                       reason="ray is not installed (pip install 'kvcli[ray]'; make install "
                       "does)"),
    pytest.mark.skipif(__import__("os").environ.get("KVCLI_TEST_COMPILED", "") not in ("", "0"),
                       reason="one Ray start per make test: the pure-Python pass runs it"),
]


def _sorted_results(path: Path) -> bytes:
    """The results lines in job order, less what differs by run (wall time), re-serialized."""
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for d in lines:
        del d["wall_time_s"]
    lines.sort(key=lambda d: d["index"])
    return "\n".join(json.dumps(d, sort_keys=True) for d in lines).encode()


def test_ray_gives_the_local_executors_results_byte_for_byte(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)    # a local Ray, started for the sweep
    runner = CliRunner()
    grid = ["--trace", CHAT, "--set", "num_blocks=512,1024", "--set", "eviction_policy=lru,arc",
            "--set", "kv_offloading_size=0.5", "--json"]
    local = runner.invoke(app, ["sweep", *grid, "--results", str(tmp_path / "local.jsonl")])
    assert local.exit_code == 0, local.output
    ray = runner.invoke(app, ["sweep", *grid, "--results", str(tmp_path / "ray.jsonl"),
                              "--executor", "ray", "--jobs", "2"])
    assert ray.exit_code == 0, ray.output
    assert ray.stdout == local.stdout                   # the grid's JSON, byte for byte
    assert _sorted_results(tmp_path / "ray.jsonl") == _sorted_results(tmp_path / "local.jsonl")
    assert json.loads(ray.stdout)["jobs_finished"] == 4
    # the trace went into the object store once, not once a job
    assert "a local Ray started for this sweep" in ray.stderr
    assert "1 trace put in the object store" in ray.stderr, ray.stderr
