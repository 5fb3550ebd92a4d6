"""Calibration files, bad and good, as a replay and `clock explain` read them: every bad field
exits 2 with one line naming the file and the field; a file for another clock or GPU is refused;
`calibrate -o` checks its output before measuring and writes it whole."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.clock.calibration_fit import fit_tables
from tests.calibration_synth import document, tables

runner = CliRunner()


def _write(tmp_path: Path, doc: dict) -> str:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _good() -> dict:
    from kvcore.models import load_preset

    factors, fit = fit_tables(load_preset("llama-3.1-8b"), tables(),
                              {"copy_tbps": 3.1, "gemm_bf16_tflops": 700.0})
    return document(factors, fit)


def _drop(doc: dict, *keys: str) -> dict:
    d = doc
    for k in keys[:-1]:
        d = d[k]
    del d[keys[-1]]
    return doc


def _set(doc: dict, value, *keys) -> dict:
    d = doc
    for k in keys[:-1]:
        d = d[k]
    d[keys[-1]] = value
    return doc


@pytest.mark.parametrize(("edit", "field", "message"), [
    (lambda d: _drop(d, "factors", "eta_kv"), "factors.eta_kv", "missing"),
    (lambda d: _drop(d, "ceilings"), "ceilings", "missing"),
    (lambda d: _set(d, "kvcli-clock-calibration/2", "schema"), "schema",
     ("unsupported schema 'kvcli-clock-calibration/2' (this kvcli reads "
     "'kvcli-clock-calibration/1')")),
    # the model is its geometry, not its name (a config.json named "llama" by its model_type
    # passed for any Llama, a 2-layer test model's file for Llama-3.1-8B)
    (lambda d: _set(d, 2, "scope", "geometry", "num_layers"), "scope.geometry.num_layers",
     ("the file was measured for 'llama-3.1-8b' with num_layers 2, llama-3.1-8b has 32 "
      "(calibrate again for it)")),
    (lambda d: _set(d, 5120, "scope", "geometry", "hidden_size"), "scope.geometry.hidden_size",
     ("the file was measured for 'llama-3.1-8b' with hidden_size 5120, llama-3.1-8b has 4096 "
      "(calibrate again for it)")),
    (lambda d: _drop(d, "scope", "geometry"), "scope.geometry",
     "missing: a file from before kvcli recorded the model's geometry (calibrate again)"),
    # Mixtral has Mistral's seven numbers: the experts tell them apart
    (lambda d: _set(d, 8, "scope", "geometry", "num_experts"), "scope.geometry.num_experts",
     ("the file was measured for 'llama-3.1-8b' with num_experts 8, llama-3.1-8b has 0 "
      "(calibrate again for it)")),
    (lambda d: _drop(d, "scope", "geometry", "quantization"), "scope.geometry.quantization",
     "missing"),
    (lambda d: _set(d, 0, "scope", "geometry", "vocab_size"), "scope.geometry.vocab_size",
     "must be a positive integer, got 0"),
    (lambda d: _set(d, ["eta_fast"], "fit", "undetermined"), "fit.undetermined",
     ("must be a list of factor keys (eta_gemm_c, eta_gemm_m, eta_attn, eta_kv, "
      "eta_elementwise, c_step_us, c_req_us), got ['eta_fast']")),
    (lambda d: _set(d, 2, "scope", "tp"), "scope.tp",
     "the file was measured for 2, this run has 1 (calibrate again for it)"),
    (lambda d: _set(d, -0.5, "factors", "eta_gemm_m"), "factors.eta_gemm_m",
     "must be a finite number > 0, got -0.5"),
    (lambda d: _set(d, -1.0, "factors", "t_min_us", "gemm"), "factors.t_min_us.gemm",
     "must be a finite number >= 0, got -1.0"),
    (lambda d: _set(d, -3.0, "tables", "gemm", 2, "us"), "tables.gemm[2].us",
     "must be a finite number > 0, got -3.0"),
    (lambda d: _set(d, 0, "ceilings", "copy_tbps"), "ceilings.copy_tbps",
     "must be a finite number > 0, got 0"),
    (lambda d: _set(d, 3, "factors", "t_min_us"), "factors.t_min_us", "must be an object"),
    # finite but no GPU's: a step of 1e297 ms (a --metrics replay wrote snapshots for ever, a
    # cluster hung) or an infinite one (eta_kv 1e-320)
    (lambda d: _set(d, 1e300, "factors", "c_step_us"), "factors.c_step_us",
     "must be from 0 to 3.6e+09, got 1e+300"),
    (lambda d: _set(d, 1e-320, "factors", "eta_kv"), "factors.eta_kv",
     "must be from 1e-06 to 100, got 1e-320"),
    (lambda d: _set(d, 1e-9, "ceilings", "gemm_bf16_tflops"), "ceilings.gemm_bf16_tflops",
     "must be from 1e-06 to 1e+06, got 1e-09"),
    (lambda d: _set(d, [1], "tables", "decode_attention", 0), "tables.decode_attention[0]",
     "must be an object"),
    (lambda d: _set(d, "fast", "tables", "prefill_attention", 1, "chunk"),
     "tables.prefill_attention[1].chunk", "must be a finite number > 0, got 'fast'"),
])
def test_bad_calibration_files_exit_2_naming_file_and_field(tmp_path, edit, field, message):
    path = _write(tmp_path, edit(_good()))
    want = f"error: {path}: field '{field}': {message}"
    for args in (["replay", "traces/shared-prefix.jsonl", "--model", "llama-3.1-8b",
                  "--calibration", path],
                 ["clock", "explain", "--model", "llama-3.1-8b", "--calibration", path,
                  "--case", "d=1*1@100"]):
        r = runner.invoke(app, args)
        assert r.exit_code == 2, r.output
        assert r.stderr.strip().splitlines() == [want]


def test_unreadable_calibration_files_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "half.json"
    bad.write_text('{"schema": ')
    for path, line in ((str(bad), f"error: {bad}:1: not valid JSON: Expecting value"),
                       (str(tmp_path / "nope.json"), (f"error: {tmp_path}/nope.json: no such "
                                                     "file")),
                       (str(tmp_path), f"error: {tmp_path}: is a directory, not a file")):
        r = runner.invoke(app, ["replay", "traces/shared-prefix.jsonl", "--model",
                                "llama-3.1-8b", "--calibration", path])
        assert r.exit_code == 2
        assert r.stderr.strip().splitlines() == [line]
    (tmp_path / "list.json").write_text("[]")
    r = runner.invoke(app, ["replay", "traces/shared-prefix.jsonl", "--model", "llama-3.1-8b",
                            "--calibration", str(tmp_path / "list.json")])
    assert r.stderr.strip() == (f"error: {tmp_path}/list.json: a calibration file must hold a "
                                "JSON object")


def test_calibration_with_another_clock_or_gpu_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, _good())
    r = runner.invoke(app, ["replay", "traces/shared-prefix.jsonl", "--model", "llama-3.1-8b",
                            "--calibration", path, "--clock", "roofline", "--gpu", "h100"])
    assert r.exit_code == 2
    assert r.stderr.strip() == ("error: option --calibration: a calibration file is read by the "
                                "calibrated clock only, not 'roofline'")
    r = runner.invoke(app, ["replay", "traces/shared-prefix.jsonl", "--model", "llama-3.1-8b",
                            "--calibration", path, "--gpu", "a100"])
    assert r.exit_code == 2
    assert r.stderr.strip() == (f"error: option --gpu: {path} was measured on 'NVIDIA H100 80GB "
                                "HBM3', not on 'a100' (leave --gpu out: the file's ceilings are "
                                "the GPU)")
    r = runner.invoke(app, ["replay", "traces/shared-prefix.jsonl", "--model", "llama-3.1-8b",
                            "--calibration", path, "--gpu", "h100", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["clock"]["gpu"]["hbm_tbps"] == 3.1


def test_the_file_is_checked_before_measuring_and_written_whole(tmp_path: Path,
                                                               monkeypatch) -> None:
    from kvcli.calibration import run

    calls = []
    doc = _good()

    def fake(g, **kw):
        calls.append(g.name)
        return doc

    monkeypatch.setattr(run, "calibrate", fake)
    r = runner.invoke(app, ["calibrate", "--gpu", "--model", "llama-3.1-8b", "-o",
                            str(tmp_path / "missing" / "cal.json")])
    assert r.exit_code == 2 and calls == []         # refused before any measurement
    assert r.stderr.startswith("error: option --output: ")
    out = tmp_path / "cal.json"
    out.write_text("old")
    r = runner.invoke(app, ["calibrate", "--gpu", "--model", "llama-3.1-8b", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert calls == ["llama-3.1-8b"]
    assert json.loads(out.read_text()) == doc
    assert os.listdir(tmp_path) == ["cal.json"]     # the temporary file was renamed over it
