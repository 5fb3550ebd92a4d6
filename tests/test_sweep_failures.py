"""`kvcli sweep` when its machinery fails: a local worker killed mid-job, a Ray address where
nothing listens, Ray's own signal handlers, a results line whose newline never came, a results
file of the other command, and the worker's defaults on each line."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
PREFIX = str(ROOT / "traces" / "shared-prefix.jsonl")
runner = CliRunner()
needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                               reason="ray is not installed (make install does)")

# Imported by every spawned worker (PYTHONPATH): the job with num_blocks 301 SIGKILLs its worker
# (the OOM killer's way) each time; 302 only the first time (a marker file remembers).
_KILLER = """
import os, signal
import kvcore.sweep.job as job
_compute = job.compute
def compute(j, trace):
    n = j.config.get("num_blocks")
    mark = os.path.join({tmp!r}, "killed-302")
    if n == 301 or (n == 302 and not os.path.exists(mark)):
        if n == 302:
            open(mark, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return _compute(j, trace)
job.compute = compute
"""


def test_a_killed_worker_reruns_its_jobs_and_a_job_that_keeps_killing_fails_alone(
        tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(_KILLER.format(tmp=str(tmp_path))))
    monkeypatch.setenv("PYTHONPATH", f"{site}:{ROOT}")
    res = tmp_path / "r.jsonl"
    r = runner.invoke(app, ["sweep", "--trace", PREFIX, "--set", "num_blocks=300,301,302,303",
                            "--results", str(res), "--jobs", "2"])
    # (a BrokenProcessPool traceback, exit 1, the queued jobs never run)
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    warnings = [x for x in r.stderr.splitlines() if x.startswith("warning: job ")]
    assert len(warnings) == 1 and warnings[0].startswith("warning: job 1 (")
    assert warnings[0].endswith("failed: its worker process died 4 times (out of memory? "
                                "killed?)")
    done = sorted(json.loads(x)["config"]["num_blocks"] for x in res.read_text().splitlines())
    assert done == [300, 302, 303]                  # 302 ran again after its worker died


def test_a_ray_address_where_nothing_listens_is_one_line_and_no_file(tmp_path):
    # (ray.init retried for ever: more than 10 minutes, a Ray log line every 40 s)
    res = tmp_path / "r.jsonl"
    r = runner.invoke(app, ["sweep", "--trace", PREFIX, "--set", "num_blocks=200,300",
                            "--results", str(res), "--executor", "ray", "--ray-address",
                            "127.0.0.1:1"])
    if importlib.util.find_spec("ray") is None:
        assert r.exit_code == 2
        return
    assert r.exit_code == 2, r.output
    assert r.stderr.strip().splitlines() == [
        ("error: option --ray-address: cannot reach Ray at 127.0.0.1:1: Connection refused (a "
        "cluster's head: `ray start --head` prints its address)")]
    assert not res.exists()


@needs_ray
def test_a_local_ray_for_more_jobs_than_memory_holds_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    res = tmp_path / "r.jsonl"
    blocks = ",".join(str(n) for n in range(200, 1200))
    r = runner.invoke(app, ["sweep", "--trace", PREFIX, "--set", f"num_blocks={blocks}",
                            "--results", str(res), "--executor", "ray", "--jobs", "100000"])
    assert r.exit_code == 2, r.output
    line, = r.stderr.strip().splitlines()
    assert line.startswith("error: option --jobs: 2,000 worker processes need ~")
    assert not res.exists()


@needs_ray
def test_kvcli_signal_handlers_survive_ray_init(monkeypatch):
    import ray

    from kvcore.sweep.executor import ExecutorSettings
    from kvcore.sweep.executor_ray import RayExecutor

    def fake_init(**kw):        # what ray.init does to a driver's handlers
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(15))
        signal.signal(signal.SIGHUP, lambda *a: sys.exit(1))

    def ours(*a):
        raise KeyboardInterrupt

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", fake_init)
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    old = {s: signal.signal(s, ours) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        ex = RayExecutor(ExecutorSettings(jobs=1, address="10.0.0.1:6379"))
        ex._connect(0)
        assert signal.getsignal(signal.SIGTERM) is ours
        assert signal.getsignal(signal.SIGHUP) is ours
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def test_a_last_line_without_its_newline_is_not_a_finished_job(tmp_path):
    from kvcore.sweep.results import read_results

    res = tmp_path / "r.jsonl"
    args = ["sweep", "--trace", PREFIX, "--set", "num_blocks=200,300", "--results", str(res),
            "--jobs", "1"]
    assert runner.invoke(app, args).exit_code == 0
    res.write_bytes(res.read_bytes()[:-1])          # whole JSON, its newline never written
    held = read_results(str(res))
    assert len(held.lines) == 1 and held.partial_tail
    # (it was counted finished, then cut off by the appender: "2 of 2", then "1 of 2", exit 0)
    r = runner.invoke(app, [*args, "--resume", "--json"])
    assert r.exit_code == 0, r.output
    assert "1 finished before, 1 to run" in r.stderr
    assert json.loads(r.stdout)["jobs_finished"] == 2
    assert len(res.read_text().splitlines()) == 2


def test_resume_refuses_a_file_of_the_other_command(tmp_path):
    res = tmp_path / "r.jsonl"
    assert runner.invoke(app, ["sweep", "--trace", PREFIX, "--set", "num_blocks=200",
                               "--results", str(res)]).exit_code == 0
    before = res.read_bytes()
    r = runner.invoke(app, ["sweep", "--command", "cluster", "--trace", PREFIX, "--set",
                            "replicas=2", "--set", "num_blocks=200", "--results", str(res),
                            "--resume"])
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [
        (f"error: option --results: {res} holds results of `kvcli sweep --command replay`, "
        "this sweep runs cluster: give another results file")]
    assert res.read_bytes() == before


def test_a_results_line_records_the_workers_defaults():
    from kvcore.sweep.job import run_job
    from kvcore.sweep.results import defaults_id, results_line
    from kvcore.sweep.run import plan_sweep

    plan = plan_sweep(None, command="replay", traces=[PREFIX], sets=["num_blocks=200"])
    job = plan.jobs[0]
    outcome = run_job(job, plan.traces[job.trace_sha256])
    assert outcome["defaults"] == defaults_id("replay")
    assert results_line(job, {**outcome, "defaults": "0123456789abcdef"})["defaults"] == \
        "0123456789abcdef"


_DIES_AT_START = """
import os, signal, sys
D = {tmp!r}
if "--multiprocessing-fork" in sys.argv:
    with open(os.path.join(D, "spawns"), "a") as f:
        f.write("x")
    if os.path.getsize(os.path.join(D, "spawns")) == 2:     # the replacement worker
        os.kill(os.getpid(), signal.SIGKILL)                   # dies as it starts
    import kvcore.sweep.job as job
    _compute = job.compute
    def compute(j, trace):
        mark = os.path.join(D, "killed")
        if j.config.get("num_blocks") == 410 and not os.path.exists(mark):
            open(mark, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return _compute(j, trace)
    job.compute = compute
"""


def test_a_replacement_worker_that_dies_as_it_starts_does_not_hang_the_sweep(tmp_path,
                                                                               monkeypatch):
    # (the traces went down the start-up pipe: a worker dead before reading them left the
    # command blocked in write(), deaf to Ctrl-C, for ever)
    import subprocess

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(
        _DIES_AT_START.format(tmp=str(tmp_path))))
    env = {**os.environ, "PYTHONPATH": f"{site}:{ROOT}"}
    res = tmp_path / "r.jsonl"
    proc = subprocess.run([sys.executable, "-m", "kvcli", "sweep", "--trace", PREFIX, "--set",
                           "num_blocks=400,410,420", "--results", str(res), "--jobs", "1"],
                          env=env, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr
    assert len(res.read_text().splitlines()) == 3


def test_a_killed_sweeps_traces_file_is_removed_by_the_next(tmp_path, monkeypatch):
    """A SIGKILLed sweep left its `kvcli-sweep-*.traces` (the whole traces, pickled) in the
    temp folder for good. A live sweep holds a lock on its file; the next sweep removes the
    unlocked ones past a minute old."""
    import fcntl
    import subprocess
    import tempfile
    import time

    from kvcore.sweep import executor_local as ex

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code = (f"import os, signal, tempfile; tempfile.tempdir = {str(tmp_path)!r}\n"
            "from kvcore.sweep.executor_local import _write_traces\n"
            "path, fd = _write_traces({'x': 1}); print(path, flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60, check=False)
    assert res.returncode == -signal.SIGKILL
    killed = Path(res.stdout.strip())
    assert killed.exists() and killed.name.startswith("kvcli-sweep-")
    old = time.time() - 3600
    os.utime(killed, (old, old))
    live = tmp_path / "kvcli-sweep-live.traces"          # a running sweep's: locked
    live.write_bytes(b"x")
    os.utime(live, (old, old))
    fresh = tmp_path / "kvcli-sweep-fresh.traces"        # just made, not yet locked
    fresh.write_bytes(b"x")
    other = tmp_path / "someone-else.traces"
    other.write_bytes(b"x")
    os.utime(other, (old, old))
    with open(live, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_SH)
        ex._remove_stale()
        assert not killed.exists()
        assert live.exists() and fresh.exists() and other.exists()
        # and a sweep's own file, locked while it runs, is gone when it ends
        path, fd = ex._write_traces({"x": 1})
        ex._remove_stale(min_age_s=0)
        assert os.path.exists(path)
        os.close(fd)
    ex._remove_stale(min_age_s=0)
    assert not os.path.exists(path) and not live.exists() and other.exists()


def test_the_defaults_id_names_derived_rules_too():
    """A job naming a GPU ran 2,048 tokens and 128 sequences before vllm serve's batch
    defaults per GPU, 8,192 and 1,024 on an H100 after: no field's default changed, so an id of
    the fields alone let `--resume` keep the old jobs beside the new. The rule's version is in
    it (the id of the fields alone, as 0709eb9 wrote it, is another)."""
    import dataclasses
    import hashlib

    import orjson

    from kvcore.engine.options import KNOBS
    from kvcore.sweep.results import defaults_id

    fields_only = {f.name: f.default for f in KNOBS if f.default is not dataclasses.MISSING}
    before = hashlib.sha256(orjson.dumps(fields_only, option=orjson.OPT_SORT_KEYS)).hexdigest()
    assert defaults_id("replay") != before[:16]
