"""`kvcli sweep --resume` (local executor): a SIGKILLed sweep runs only its missing jobs, a line
a crash left half written is cut, jobs run under other option defaults are refused, and a named
file counts by its bytes (old path-based ids still resume)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sweep_runs import kvcli_json, result_lines
from typer.testing import CliRunner

from kvcli.app import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
CHAT = str(ROOT / "traces" / "multiturn-chat.jsonl")
PREFIX = str(ROOT / "traces" / "shared-prefix.jsonl")


def test_sigkill_then_resume_runs_only_the_missing_jobs(tmp_path):
    """A sweep killed with SIGKILL after some jobs finished, then `--resume`: only the missing
    jobs run, and every job is in the results exactly once."""
    res = tmp_path / "r.jsonl"
    grid = ["--trace", CHAT, "--set", "num_blocks=400,500,600,700,800,900,1000,1100,1200,1300",
            "--set", "max_num_seqs=32,64", "--results", str(res), "--jobs", "1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "kvcli", "sweep", *grid], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if res.exists() and res.read_text().count("\n") >= 2:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the sweep ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    before = result_lines(res)
    assert 2 <= len(before) < 20
    r = subprocess.run([sys.executable, "-m", "kvcli", "sweep", *grid, "--resume", "--json"],
                       cwd=ROOT, env=env, capture_output=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr.decode()
    err = r.stderr.decode()
    assert f"{len(before)} finished before, {20 - len(before)} to run" in err, err
    assert f"ran {20 - len(before)} job(s)" in err, err
    after = result_lines(res)
    assert after[:len(before)] == before                # appended, never rewritten
    ids = [d["job_id"] for d in after]
    assert len(ids) == len(set(ids)) == 20
    doc = json.loads(r.stdout)
    assert doc["jobs_finished"] == 20 and [j["index"] for j in doc["jobs"]] == list(range(20))


@pytest.mark.parametrize("cut", [b'{"job_id": "x", "conf', b"\x00\x00"])
def test_resume_cuts_a_line_a_crash_left_half_written(tmp_path, cut):
    res = tmp_path / "r.jsonl"
    args = ["sweep", "--trace", CHAT, "--set", "num_blocks=512,1024", "--results", str(res),
            "--jobs", "1"]
    assert runner.invoke(app, args).exit_code == 0
    whole = res.read_bytes()
    res.write_bytes(whole.splitlines(keepends=True)[0] + cut)
    r = runner.invoke(app, [*args, "--resume"])
    assert r.exit_code == 0, r.output
    lines = result_lines(res)
    assert len(lines) == 2 and {d["index"] for d in lines} == {0, 1}


def test_resume_refuses_jobs_run_under_other_defaults(tmp_path):
    """A job's id names the keys its sweep sets, not the defaults: a file from before
    gpu_memory_utilization became vLLM's 0.92 held 0.9-sized jobs under today's ids, and
    `--resume` kept them beside 0.92-sized ones. Each line now names its defaults."""
    from kvcore.sweep.results import defaults_id

    res = tmp_path / "r.jsonl"
    grid = ["sweep", "--trace", CHAT, "--set", "num_blocks=400,500", "--results", str(res)]
    r = runner.invoke(app, grid)
    assert r.exit_code == 0, r.output
    lines = result_lines(res)
    assert [d["defaults"] for d in lines] == [defaults_id("replay")] * 2
    assert defaults_id("cluster") != defaults_id("replay")
    # an older kvcli's line (no "defaults"), and a job left to run
    old = {k: v for k, v in lines[0].items() if k != "defaults"}
    res.write_text(json.dumps(old) + "\n")
    r = runner.invoke(app, [*grid, "--resume"])
    assert r.exit_code == 2, r.output
    assert (f"error: option --results: {res}: 1 of this sweep's 1 finished job(s) in it ran "
            "under other option defaults") in r.stderr, r.stderr
    assert result_lines(res) == [old]                     # nothing run, nothing appended
    res.write_text(json.dumps(old) + "\n" + json.dumps(lines[1]) + "\n")
    r = runner.invoke(app, ["sweep", "report", str(res)])
    assert r.exit_code == 0, r.output
    assert f"warning: {res}: its jobs ran under 2 sets of option defaults" in r.stderr
    # today's line resumes
    res.write_text(json.dumps(lines[0]) + "\n")
    r = runner.invoke(app, [*grid, "--resume"])
    assert r.exit_code == 0, r.output
    assert [d["job_id"] for d in result_lines(res)] == [d["job_id"] for d in lines]


def test_a_named_file_counts_by_its_bytes_and_old_ids_still_resume(tmp_path):
    """A model_config gives the same job ids from any folder (a resume from another one ran
    every job again); a line written under the old, path-based id is that job; two names of
    the same bytes are refused (they were folded "as a router's options")."""
    cfg = tmp_path / "m.json"
    cfg.write_text((ROOT / "tests/data/calibration/tiny-llama.config.json").read_text())
    spec = tmp_path / "s.toml"
    spec.write_text(f'traces = ["{PREFIX}"]\n[options]\nmodel_config = "m.json"\n'
                    'num_blocks = 256\n[grid]\nblock_size = [16, 32]\n')
    first = kvcli_json("sweep", str(spec))
    res = tmp_path / "s.results.jsonl"
    lines = result_lines(res)
    # as an older kvcli wrote them: each under its id from the path
    from kvcore.sweep.grid import expand
    from kvcore.sweep.spec import load_spec

    jobs = expand(load_spec(str(spec))).jobs
    assert [j.legacy_id != j.job_id for j in jobs] == [True, True]
    legacy = {j.job_id: j.legacy_id for j in jobs}
    res.write_text("".join(json.dumps({**d, "job_id": legacy[d["job_id"]]}) + "\n"
                           for d in lines))
    r = runner.invoke(app, ["sweep", str(spec), "--resume", "--json"])
    assert r.exit_code == 0, r.output
    assert "2 finished before, 0 to run" in r.stderr and len(result_lines(res)) == 2
    assert [j["result"] for j in json.loads(r.stdout)["jobs"]] == \
        [j["result"] for j in first["jobs"]]
    (tmp_path / "n.json").write_text(cfg.read_text())
    spec.write_text(f'traces = ["{PREFIX}"]\n[options]\nnum_blocks = 256\n[grid]\n'
                    'model_config = ["m.json", "n.json"]\n')
    r = runner.invoke(app, ["sweep", str(spec), "--results", str(tmp_path / "x.jsonl")])
    assert r.exit_code == 2 and r.stderr == (
        f"error: {spec}:5: field 'grid.model_config': {tmp_path}/n.json holds the same bytes as "
        f"{tmp_path}/m.json: one job would stand for both; give one of them\n")
