"""What `kvcli calibrate` and `kvcli clock explain` refuse or say about their inputs: a file read
for another model's shapes, a CPU smoke file, the tiny grid on a GPU, `-o -`, a JSON nested past
Python's recursion limit, cases `vllm bench forward` refuses, torch without Triton."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from tests.test_calibration_cli import TINY
from tests.test_calibration_files import _good

runner = CliRunner()
SAMPLE = "tests/data/calibration/tiny-cpu.calibration.json"


def test_a_file_is_for_its_models_shapes_not_its_name() -> None:
    # the 2-layer test model's file (scope.model "llama", the model_type) passed for any model
    # named "llama": Llama-3.1-8B's steps came out at 418,338,170 ms, exit 0
    r = runner.invoke(app, ["clock", "explain", "--model", "llama-3.1-8b", "--calibration",
                            SAMPLE, "--case", "d=64*1@4097"])
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [
        (f"error: {SAMPLE}: field 'scope.geometry.num_layers': the file was measured for 'llama' "
        "with num_layers 2, llama-3.1-8b has 32 (calibrate again for it)")]


def test_a_cpu_file_is_said_to_be_one_and_its_cpu_terms_are_shown(tmp_path: Path) -> None:
    doc = json.loads(Path(SAMPLE).read_text())
    r = runner.invoke(app, ["clock", "explain", "--model-config", TINY, "--calibration", SAMPLE,
                            "--case", "d=3*1@40"])
    assert r.exit_code == 0, r.output
    assert r.stderr.strip().splitlines() == [
        (f"warning: calibration {SAMPLE}: it was measured on a CPU under the Triton interpreter "
        "(a smoke run: its numbers describe no GPU); no measured point determined "
        f"{', '.join(doc['fit']['undetermined'])} (a lower bound: times that depend on it are "
        "too long; calibrate with --grid full)")]
    # the file's CPU terms are the clock's: the text said "CPU terms default" whatever they were
    doc["factors"]["c_step_us"], doc["factors"]["cpu_terms"] = 900.0, "measured"
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(doc))
    r = runner.invoke(app, ["clock", "explain", "--model-config", TINY, "--calibration",
                            str(path), "--case", "d=3*1@40"])
    assert r.exit_code == 0, r.output
    assert "CPU terms 900 us a step, 5 us a request (the file's)" in " ".join(r.stdout.split())
    r = runner.invoke(app, ["clock", "explain", "--model-config", TINY, "--calibration",
                            str(path), "--case", "d=3*1@40", "--json"])
    data = json.loads(r.stdout)
    assert (data["cpu_step_us"], data["cpu_request_us"]) == (900.0, 5.0)
    assert data["warning"].startswith(f"calibration {path}: it was measured on a CPU")
    r = runner.invoke(app, ["clock", "explain", "--model", "llama-3.1-8b", "--gpu", "h100",
                            "--case", "d=1*1@100", "--json"])
    assert json.loads(r.stdout)["warning"] is None and r.stderr == ""


def test_the_tiny_grid_is_refused_on_a_gpu(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    r = runner.invoke(app, ["calibrate", "--gpu", "--model", "llama-3.1-8b", "--grid", "tiny",
                            "-o", str(tmp_path / "cal.json")])
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [
        ("error: option --grid: the tiny grid is the CPU tests' (--device cpu): its points leave "
        "factors undetermined; calibrate a GPU with --grid full")]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_output_to_stdout_is_the_file_alone(monkeypatch, extra: list[str]) -> None:
    from kvcli.calibration import run

    doc = _good()
    monkeypatch.setattr(run, "calibrate", lambda g, **kw: doc)
    r = runner.invoke(app, ["calibrate", "--gpu", "--model", "llama-3.1-8b", "-o", "-", *extra])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == doc          # (the tables followed it: "Extra data")
    assert "fitted factors" in r.stderr


def test_torch_without_triton_is_no_device(monkeypatch) -> None:
    pytest.importorskip("torch")
    from kvcli.calibration.run import device_for
    from kvcore.errors import NoDeviceError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "triton" else real(name, *a))
    with pytest.raises(NoDeviceError, match=r"^Triton is not installed"):
        device_for("cuda")


def test_json_nested_past_the_recursion_limit_is_one_line(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    for args in (["clock", "explain", "--model", "llama-3.1-8b", "--calibration", str(deep),
                  "--case", "d=1"],
                 ["clock", "explain", "--model-config", str(deep), "--gpu", "h100", "--case",
                  "d=1"]):
        r = runner.invoke(app, args)
        assert r.exit_code == 2
        assert r.stderr.strip().splitlines() == [
            f"error: {deep}: nested too deeply to be a kvcli input"]
    toml = tmp_path / "deep.toml"
    toml.write_text("a = " + "[" * 100_000 + "]" * 100_000)
    for spec in (deep, toml):
        r = runner.invoke(app, ["sweep", str(spec)])
        assert r.exit_code == 2
        assert r.stderr.strip().splitlines() == [
            f"error: {spec}: nested too deeply to be a sweep spec"]


@pytest.mark.parametrize(("case", "why"), [
    ("d=1*1@4097c", "a chunk ('c') is a prefill with a prefix (Q > 1 + D and K > Q)"),
    ("x=2048c", "a chunk ('c') is a prefill with a prefix (Q > 1 + D and K > Q)"),
    ("v=4:3", "a verify step has Q = 1 + D and a prefix (K > Q)"),
    ("v=5@100:3", "a verify step has Q = 1 + D and a prefix (K > Q)"),
])
def test_cases_vllm_bench_forward_refuses_are_refused(case: str, why: str) -> None:
    r = runner.invoke(app, ["clock", "explain", "--model", "llama-3.1-8b", "--gpu", "h100",
                            "--case", case])
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [f"error: option --case: case {case!r}: {why}"]


def test_cases_vllm_bench_forward_takes_are_taken() -> None:
    r = runner.invoke(app, ["clock", "explain", "--model", "llama-3.1-8b", "--gpu", "h100",
                            "--case", "v=4@100:3", "--case", "c=2048@4096c", "--case", "p=5:0",
                            "--json"])
    assert r.exit_code == 0, r.output
    assert [c["tokens"] for c in json.loads(r.stdout)["cases"]] == [4, 2048, 5]
