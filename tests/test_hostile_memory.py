"""Host memory spent while a run works: requests hold their tokens while they run or wait
preempted (as vLLM's do), so what a trace holds at once is known only as it runs. Six requests
of 10,000,000 output tokens under ulimit -v 2500000 ended in a MemoryError traceback (exit 1)
after a minute; now one line, exit 1, and the outputs removed as for any failed run."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app
from kvcli.output_failures import OUT_OF_MEMORY

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


# -- worker processes the system refuses (ulimit -u, or no memory for a fork): a traceback

def _no_process(monkeypatch) -> None:
    import multiprocessing.context as ctx

    def refused(_process):
        raise BlockingIOError(11, "Resource temporarily unavailable")

    for kind in (ctx.SpawnProcess, ctx.ForkProcess):
        monkeypatch.setattr(kind, "_Popen", staticmethod(refused))


def test_sweep_workers_that_cannot_start_are_one_line(tmp_path, monkeypatch):
    _no_process(monkeypatch)
    results = tmp_path / "r.jsonl"
    r = runner.invoke(app, ["sweep", "--trace", SHARED, "--set", "num_blocks=1000,2000,3000",
                            "--results", str(results), "--jobs", "2"])
    assert r.exit_code == 2
    assert r.stderr.splitlines()[-1] == (
        "error: option --jobs: cannot start 2 worker processes: Resource temporarily "
        "unavailable (the process limit, ulimit -u, or the machine's memory): fewer start "
        "with a smaller value")
    assert not results.exists()


def test_curve_workers_that_cannot_start_are_one_line(monkeypatch):
    _no_process(monkeypatch)
    r = runner.invoke(app, ["curve", SHARED, "--capacities", "100,200,300", "--policies",
                            "fifo", "--jobs", "3"])
    assert r.exit_code == 2
    assert r.stderr.splitlines()[-1] == (
        "error: option --jobs: cannot start 3 worker processes: Resource temporarily "
        "unavailable (the process limit, ulimit -u, or the machine's memory): fewer start "
        "with a smaller value")
