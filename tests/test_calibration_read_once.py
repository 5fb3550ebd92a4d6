"""A calibration file is read once a run (`kvcore.clock.calibration.read_calibration`): a
replay's start-up read it three times (vllm serve's batch defaults on its GPU twice, then the
clock), a cluster's replicas again each, and `--calibration -` found stdin empty the second
time ("<stdin>:1: not valid JSON")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.clock import calibration

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "calibration" / "tiny-cpu.calibration.json"
TINY = str(ROOT / "tests" / "data" / "calibration" / "tiny-llama.config.json")
TRACE = str(ROOT / "traces" / "shared-prefix.jsonl")


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The paths `read_calibration` reads, as it reads them."""
    seen: list[str] = []
    real = calibration.read_json

    def counted(path: str):
        seen.append(path)
        return real(path)

    monkeypatch.setattr(calibration, "read_json", counted)
    return seen


@pytest.mark.parametrize("command", [["replay"], ["cluster", "--replicas", "3"]])
def test_a_run_reads_its_calibration_once(tmp_path, reads, command):
    cal = tmp_path / "cal.json"         # (a file of its own: read in no earlier test)
    cal.write_bytes(SAMPLE.read_bytes())
    r = runner.invoke(app, [*command, TRACE, "--model-config", TINY, "--calibration", str(cal),
                            "--json"])
    assert r.exit_code == 0, r.output
    assert reads == [str(cal)]


def test_a_bad_file_says_the_same_and_is_read_once(tmp_path, reads):
    cal = tmp_path / "bad.json"
    doc = json.loads(SAMPLE.read_text())
    doc["ceilings"]["copy_tbps"] = -1
    cal.write_text(json.dumps(doc))
    r = runner.invoke(app, ["replay", TRACE, "--model-config", TINY, "--calibration", str(cal)])
    assert r.exit_code == 2
    assert r.stderr == (f"error: {cal}: field 'ceilings.copy_tbps': must be a finite number > 0, "
                        "got -1\n")
    assert reads == [str(cal)]
    # the same file rewritten is another version: read again
    doc["ceilings"]["copy_tbps"] = 2.0
    cal.write_text(json.dumps(doc))
    r = runner.invoke(app, ["replay", TRACE, "--model-config", TINY, "--calibration", str(cal),
                            "--json"])
    assert r.exit_code == 0, r.output
    assert reads == [str(cal)] * 2


def test_a_calibration_on_stdin(reads):
    calibration._READ.forget("-")     # (stdin is read once a process)
    r = runner.invoke(app, ["replay", TRACE, "--model-config", TINY, "--calibration", "-",
                            "--json"], input=SAMPLE.read_text())
    calibration._READ.forget("-")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["clock"]["name"] == "calibrated" and reads == ["-"]
