"""Host memory spent while a run works: requests hold their tokens while they run or wait
preempted (as vLLM's do), so what a trace holds at once is known only as it runs. Six requests
of 10,000,000 output tokens under ulimit -v 2500000 ended in a MemoryError traceback (exit 1)
after a minute; now one line, exit 1, and the outputs removed as for any failed run."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app
from kvcli.output import OUT_OF_MEMORY

ROOT = Path(__file__).resolve().parents[1]
SHARED = str(ROOT / "traces" / "shared-prefix.jsonl")
runner = CliRunner()


def test_memory_spent_midway_is_one_line_and_leaves_no_output(tmp_path, monkeypatch):
    from kvcore.engine import replay

    def spent(*_a, **_k):
        raise MemoryError

    # (after every step line is written: the run ran out as it ended)
    monkeypatch.setattr(replay, "finish_outputs", spent)
    steps = tmp_path / "steps.jsonl"
    r = runner.invoke(app, ["replay", SHARED, "--steps", str(steps)])
    assert r.exit_code == 1
    assert r.stderr.splitlines()[-1] == OUT_OF_MEMORY
    assert "Traceback" not in r.output
    assert list(tmp_path.iterdir()) == []
