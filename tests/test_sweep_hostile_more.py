"""`kvcli sweep` on a hostile host: a temporary folder that is full or unusable (the workers'
traces file), two sweeps on one results file at once, a resume with nothing left to run."""

from __future__ import annotations

import errno
import json
import tempfile
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.sweep import executor_local

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
CHAT = str(ROOT / "traces" / "multiturn-chat.jsonl")


def _grid(res: Path, blocks: str = "600,700") -> list[str]:
    return ["sweep", "--trace", CHAT, "--set", f"num_blocks={blocks}", "--results", str(res),
            "--jobs", "1"]


def _one_error_line(r) -> str:
    assert "Traceback" not in r.output, r.output
    errors = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 1, r.stderr
    return errors[0]


def _full_disk(tmp: Path, monkeypatch) -> None:
    """The traces file's write fails part-way with ENOSPC (a full temp folder)."""
    def dump(obj, f, protocol=None):
        f.write(b"x" * 1000)
        f.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setattr(executor_local, "pickle", types.SimpleNamespace(dump=dump))


def test_a_full_temp_folder_is_one_line_and_leaves_no_file(tmp_path, monkeypatch):
    """It was an OSError traceback from pickle.dump (exit 1) that left the partial
    kvcli-sweep-*.traces and an empty results file."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    _full_disk(tmp, monkeypatch)
    res = tmp_path / "r.jsonl"
    r = runner.invoke(app, _grid(res))
    assert r.exit_code == 2, r.output
    line = _one_error_line(r)
    assert str(tmp) in line and "No space left on device" in line, line
    assert list(tmp.iterdir()) == []
    assert not res.exists()


def test_a_full_temp_folder_keeps_a_resumed_results_file_as_it_was(tmp_path, monkeypatch):
    res = tmp_path / "r.jsonl"
    assert runner.invoke(app, _grid(res, "600")).exit_code == 0
    before = res.read_bytes()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    _full_disk(tmp, monkeypatch)
    r = runner.invoke(app, [*_grid(res), "--resume"])
    assert r.exit_code == 2 and "No space left on device" in _one_error_line(r)
    assert res.read_bytes() == before and list(tmp.iterdir()) == []


@pytest.mark.parametrize("where", ["gettempdir", "mkstemp"])
def test_no_usable_temp_folder_is_one_line(tmp_path, monkeypatch, where):
    """tempfile's FileNotFoundError ("No usable temporary directory found") was a traceback;
    so was a temp folder gone before the file was made."""
    if where == "gettempdir":
        def gettempdir():
            raise FileNotFoundError(errno.ENOENT, "No usable temporary directory found in "
                                    "['/nowhere', '/tmp']")
        monkeypatch.setattr(tempfile, "gettempdir", gettempdir)
    else:
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    res = tmp_path / "r.jsonl"
    r = runner.invoke(app, _grid(res))
    assert r.exit_code == 2, r.output
    line = _one_error_line(r)
    if where == "gettempdir":
        assert "no usable temporary folder" in line and "/nowhere" in line, line
    else:
        assert str(tmp_path / "gone") in line and "No such file" in line, line
    assert not res.exists()


def test_the_workers_still_get_the_traces(tmp_path, monkeypatch):
    """(the fixed writer still writes a whole file the workers read)"""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    res = tmp_path / "r.jsonl"
    r = runner.invoke(app, _grid(res, "600"))
    assert r.exit_code == 0, r.output
    assert len(res.read_text().splitlines()) == 1
    assert json.loads(res.read_text())["config"]["num_blocks"] == 600
    assert not list(tmp_path.glob("kvcli-sweep-*"))


def _free(path: Path) -> bool:
    """No sweep holds ``path`` (an exclusive lock is ours at once)."""
    import fcntl
    import os

    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


@pytest.mark.parametrize("executor", ["local", "ray"])
def test_a_results_file_another_sweep_holds_is_refused_before_any_job(tmp_path, executor):
    """Two sweeps at once on one file both ran every job (each twice in the file; only a later
    warning said "N line(s) repeat a job"). A sweep holds its file; the second is refused."""
    import fcntl

    if executor == "ray":
        pytest.importorskip("ray")
    res = tmp_path / "r.jsonl"
    assert runner.invoke(app, _grid(res, "600")).exit_code == 0
    before = res.read_bytes()
    empty = tmp_path / "empty.jsonl"                # (a sweep's file before its first job)
    empty.write_bytes(b"")
    with open(res, "rb") as a, open(empty, "rb") as b:
        fcntl.flock(a, fcntl.LOCK_EX)
        fcntl.flock(b, fcntl.LOCK_EX)
        for path, extra in ((res, ["--resume"]), (empty, []), (empty, ["--resume"])):
            r = runner.invoke(app, [*_grid(path), "--executor", executor, *extra])
            assert r.exit_code == 2, r.output
            line = _one_error_line(r)
            assert line == (f"error: {path}: another kvcli sweep is writing it (this sweep "
                            "would run its jobs again): wait for it to end, then --resume; "
                            "or give another results file"), line
            assert "sweep: 2 job(s)" not in r.stderr
        # `sweep report` only reads
        r = runner.invoke(app, ["sweep", "report", str(res)])
        assert r.exit_code == 0 and "1 finished job(s)" in " ".join(r.stdout.split()), r.output
    assert res.read_bytes() == before and empty.read_bytes() == b""


def test_the_hold_ends_with_the_sweep_on_every_path(tmp_path, monkeypatch):
    res = tmp_path / "r.jsonl"
    assert runner.invoke(app, _grid(res, "600")).exit_code == 0
    assert _free(res)
    r = runner.invoke(app, _grid(res))            # refused while held: finished jobs, no --resume
    assert r.exit_code == 2 and "--resume runs only the missing" in r.stderr
    assert _free(res)
    import kvcore.sweep.run as sweep_run_mod

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    with monkeypatch.context() as m:
        m.setattr(sweep_run_mod, "run_sweep", interrupted)
        r = runner.invoke(app, [*_grid(res), "--resume"])
    assert r.exit_code == 130 and "interrupted" in r.stderr, r.output
    assert _free(res)
    r = runner.invoke(app, [*_grid(res), "--resume"])
    assert r.exit_code == 0 and len(res.read_text().splitlines()) == 2, r.output
    assert _free(res)


def test_two_sweeps_at_once_on_one_file_run_each_job_once(tmp_path):
    import os
    import subprocess
    import sys
    import time

    res = tmp_path / "r.jsonl"
    grid = _grid(res, "600,700,800,900,1000,1100")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(tmp_path / "err", "wb") as err:
        first = subprocess.Popen([sys.executable, "-m", "kvcli", *grid], cwd=ROOT, env=env,
                                 stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and first.poll() is None:
            if res.exists() and res.read_text().count("\n") >= 1:
                break
            time.sleep(0.02)
        assert first.poll() is None, "the first sweep ended before the second started"
        r = runner.invoke(app, [*grid, "--resume"])
        assert r.exit_code == 2 and "another kvcli sweep is writing it" in r.stderr, r.output
        assert first.wait(300) == 0, (tmp_path / "err").read_text()
    finally:
        if first.poll() is None:
            first.kill()
    ids = [json.loads(x)["job_id"] for x in res.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 6


def test_a_resume_with_nothing_left_says_so(tmp_path):
    """It said "ran 0 job(s) in 0.0 s (local: 2 worker processes)": no process started."""
    res = tmp_path / "r.jsonl"
    assert runner.invoke(app, _grid(res, "600")).exit_code == 0
    before = res.read_bytes()
    r = runner.invoke(app, [*_grid(res, "600"), "--resume"])
    assert r.exit_code == 0, r.output
    assert "1 finished before, 0 to run" in r.stderr, r.stderr
    assert f"nothing left to run: every job of this sweep is in {res}" in r.stderr, r.stderr
    assert "ran 0 job(s)" not in r.stderr and "worker process" not in r.stderr
    assert "1 of 1 jobs finished" in " ".join(r.stdout.split()) and res.read_bytes() == before


def test_a_ray_that_cannot_write_its_session_folder_is_one_line(tmp_path, monkeypatch):
    """ray.init raised an OSError (a full /tmp, or RAY_TMPDIR under a file): a traceback."""
    pytest.importorskip("ray")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    (tmp_path / "file").write_bytes(b"")
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path / "file" / "ray"))
    res = tmp_path / "r.jsonl"
    r = runner.invoke(app, [*_grid(res, "600"), "--executor", "ray"])
    assert r.exit_code == 2, r.output
    assert _one_error_line(r) == (
        f"error: option --executor: cannot start or reach Ray: [Errno 20] Not a directory: "
        f"'{tmp_path / 'file' / 'ray'}' (Ray's session folder, under RAY_TMPDIR or /tmp/ray, "
        "must be writable)")
    assert not res.exists()
