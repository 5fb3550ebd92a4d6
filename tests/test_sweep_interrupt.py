"""`kvcli sweep` (local executor) on Ctrl-C while a worker process starts, and what it says of
its workers and options: found by an adversarial pass."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import time
from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app

runner = CliRunner()
PREFIX = str(Path(__file__).resolve().parents[1] / "traces" / "shared-prefix.jsonl")


def _running(pid: int | None) -> bool:
    """The process runs (not gone, not a zombie), asked of the OS. `Process.is_alive()` can say
    True of a dead worker: the pool's manager thread joins its workers too, and when its
    waitpid reaps one first, ours fails (ECHILD) and multiprocessing reads that as "still
    running" until that thread records the exit code (CI, 1 run in ~50 under load: the
    worker's /proc entry was already gone when is_alive() said True)."""
    if pid is None:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:                 # no /proc: ask for the process by its pid
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _still_running(pids: list[int], seconds: float = 10.0) -> list[int]:
    """The pids still running after up to `seconds` (a worker the sweep ended may take a moment
    to go on a loaded machine: 1 run in 5 under three busy cores; the one a bug leaves waits
    for work, or for a pipe, until the command exits, so 10 s still tells them apart)."""
    deadline = time.monotonic() + seconds
    while (left := [pid for pid in pids if _running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def test_ctrl_c_while_a_worker_starts_leaves_no_worker(tmp_path, monkeypatch, capfd):
    # A Ctrl-C inside a worker's start (the traces written to it through a pipe) came before
    # the pool knew the process: the sweep ended (130) but could not end that worker, which
    # waited for work until the command exited (and a cut pipe printed its traceback).
    spawn = multiprocessing.get_context("spawn").Process
    start = spawn.start

    def start_then_ctrl_c(self):
        start(self)
        signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(spawn, "start", start_then_ctrl_c)
    try:
        r = runner.invoke(app, ["sweep", "--trace", PREFIX, "--set", "num_blocks=200,300",
                                "--results", str(tmp_path / "r.jsonl"), "--jobs", "2"])
        assert r.exit_code == 130, r.output
        assert "Traceback" not in r.output
        assert _still_running([p.pid for p in multiprocessing.active_children()]) == []
        # the worker's stderr is the command's: unknown to the pool, it read its start from a
        # pipe whose queues' semaphores were gone and printed a FileNotFoundError traceback
        err = capfd.readouterr().err
        assert "Traceback" not in err, err
    finally:
        for p in multiprocessing.active_children():
            p.kill()
            p.join()


def test_ctrl_c_between_a_workers_spawn_and_its_traces_is_held(tmp_path, monkeypatch, capfd):
    # The Ctrl-C lands inside the start itself: the worker's process exists, the traces are not
    # yet written to its pipe. Unheld, the start stopped there: the worker read a cut pipe and
    # printed its traceback on the terminal (its stderr is the command's), and the pool never
    # knew it. Held (`deferred()` around the submit), the start completes and the pool ends it.
    import multiprocessing.util as mp_util

    spawnv = mp_util.spawnv_passfds
    spawned: list[int] = []

    def spawn_then_ctrl_c(*args, **kwargs):
        spawned.append(spawnv(*args, **kwargs))
        signal.raise_signal(signal.SIGINT)
        return spawned[-1]

    monkeypatch.setattr(mp_util, "spawnv_passfds", spawn_then_ctrl_c)
    try:
        r = runner.invoke(app, ["sweep", "--trace", PREFIX, "--set", "num_blocks=200,300",
                                "--results", str(tmp_path / "r.jsonl"), "--jobs", "2"])
        assert r.exit_code == 130, r.output
        assert len(spawned) == 1
        # unheld, this worker (never a multiprocessing child: its start did not finish) waited
        # on its pipe for good
        assert _still_running(spawned) == [], spawned
        assert "Traceback" not in capfd.readouterr().err
    finally:
        for pid in spawned:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        for p in multiprocessing.active_children():
            p.kill()
            p.join()


def test_it_says_the_workers_it_started_and_an_ungridded_sweep(tmp_path):
    # said "local: 100000 worker processes" for 2 jobs (2 started), and "1 jobs ( swept)"
    r = runner.invoke(app, ["sweep", "--trace", PREFIX, "--set", "num_blocks=200,300",
                            "--results", str(tmp_path / "a.jsonl"), "--jobs", "100000"])
    assert r.exit_code == 0, r.output
    assert "(local: 2 worker processes)" in r.stderr, r.stderr
    r = runner.invoke(app, ["sweep", "--trace", PREFIX, "--set", "num_blocks=200",
                            "--results", str(tmp_path / "b.jsonl")])
    assert r.exit_code == 0, r.output
    assert "sweep: 1 job(s) (nothing swept), 0 finished before" in r.stderr, r.stderr


def test_an_empty_or_repeated_metric_is_refused(tmp_path):
    # '' was dropped and an empty list meant the default table: --metrics '' showed it
    res = tmp_path / "r.jsonl"
    assert runner.invoke(app, ["sweep", "--trace", PREFIX, "--set", "num_blocks=200,300",
                               "--results", str(res)]).exit_code == 0
    for value, line in (("", "unknown metric ''"), ("hit_rate,,evictions", "unknown metric ''"),
                        ("hit_rate,hit_rate", "metric 'hit_rate' named twice")):
        r = runner.invoke(app, ["sweep", "report", str(res), "--metrics", value])
        assert r.exit_code == 2 and r.stdout == "", r.output
        assert r.stderr.startswith(f"error: option --metrics: {line}"), r.stderr
        assert len(r.stderr.splitlines()) == 1
