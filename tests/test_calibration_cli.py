"""`kvcli calibrate --gpu` end to end on CPU (the Triton kernel under its interpreter, a tiny
model and grid), the file it writes read back by `--clock calibrated` in a replay and in
`clock explain`; exit 3 without a GPU; bad files exit 2 with one line naming file and field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.clock.batch import StepBatch
from kvcore.clock.calibration import check_calibration
from kvcore.clock.calibration_fit import fastest_gemm_tflops, fit_tables
from kvcore.clock.roofline import RooflineClock
from kvcore.models import load_hf_config, read_hf_config

ROOT = Path(__file__).resolve().parents[1]
TINY = "tests/data/calibration/tiny-llama.config.json"
runner = CliRunner()


def _kvcli(*args: str, interpret: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return subprocess.run([sys.executable, "-m", "kvcli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def cpu_calibration(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    out = tmp_path_factory.mktemp("cal") / "cal.json"
    # without TRITON_INTERPRET: --device cpu sets it (it said "set TRITON_INTERPRET=1" and
    # stopped, where the docs say the option runs under the interpreter)
    p = _kvcli("calibrate", "--gpu", "--model-config", TINY, "--device", "cpu", "--grid", "tiny",
               "-o", str(out), interpret=False)
    assert p.returncode == 0, p.stderr
    (out.parent / "stderr.txt").write_text(p.stderr)
    # the file is said to describe a CPU, and the factors no tiny-grid point binds are named
    # (they are lower bounds: with the tiny grid on a GPU, prefills came out 16-33x too slow)
    loose = json.loads(out.read_text())["fit"]["undetermined"]
    assert p.stderr.strip().splitlines()[-2:] == [
        f"wrote {out}",
        (f"warning: calibration {out}: it was measured on a CPU under the Triton interpreter (a "
         "smoke run: its numbers describe no GPU)" + (
             f"; no measured point determined {', '.join(loose)} (a lower bound: times that "
             "depend on it are too long; calibrate with --grid full)" if loose else ""))]
    return out


def test_cpu_calibration_is_a_valid_file_of_its_own_fit(cpu_calibration: Path) -> None:
    doc = json.loads(cpu_calibration.read_text())
    cal = check_calibration(doc, str(cpu_calibration))
    assert doc["schema"] == "kvcli-clock-calibration/1"
    assert doc["scope"] == {"model": "llama", "dtype": "bfloat16", "kv_dtype": "bfloat16",
                            "tp": 1, "block_size": 16, "geometry": {
                                "num_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                                "num_kv_heads": 2, "head_dim": 16, "intermediate_size": 96,
                                "vocab_size": 256, "num_experts": 0, "quantization": None,
                                "layer_kinds": ["full"]}}
    t = doc["tables"]
    # the tiny grid: 5 GEMM shapes x 4 M, 3 decode, 3 prefill, 3 ops x 3 token counts
    assert (len(t["gemm"]), len(t["decode_attention"]), len(t["prefill_attention"]),
            len(t["elementwise"])) == (20, 3, 3, 9)
    # the tiny model's GEMMs: qkv (4 + 2 x 2) x 16 = 128 wide, gate_up 2 x 96, lm_head 256
    assert {(r["op"], r["n"], r["k"]) for r in t["gemm"]} == {
        ("qkv", 128, 64), ("o", 64, 64), ("gate_up", 192, 64), ("down", 64, 96),
        ("lm_head", 256, 64)}
    assert [(r["batch"], r["ctx"], r["kv_bytes"]) for r in t["decode_attention"]] == [
        (1, 16, 16 * 2 * 2 * 16 * 2), (2, 40, 2 * 40 * 128), (3, 64, 3 * 64 * 128)]
    assert all(r["us"] > 0 for rows in t.values() for r in rows)
    # a peak is at least the fastest GEMM measured (the 128^3 probe's was not)
    assert doc["ceilings"]["gemm_bf16_tflops"] >= fastest_gemm_tflops(t["gemm"])
    # the probe's own rate, as the run said it (not the raised ceiling written twice)
    probe = doc["ceilings_detail"]["gemm_probe_tflops"]
    said = (cpu_calibration.parent / "stderr.txt").read_text()
    assert f"GEMM {probe:.4g} TF\n" in said, said
    assert doc["ceilings"]["gemm_bf16_tflops"] == max(probe, fastest_gemm_tflops(t["gemm"]))
    # the factors in the file are the fit of the file's tables
    g = read_hf_config(load_hf_config(TINY), source=TINY)
    factors, fit = fit_tables(g, t, doc["ceilings"])
    assert {k: doc["factors"][k] for k in factors} == factors
    assert doc["fit"] == fit
    assert cal.factors.gemm_memory == factors["eta_gemm_m"]
    assert cal.gpu.hbm_tbps == doc["ceilings"]["copy_tbps"]


def _paths(obj, path: str = "") -> set[str]:
    """Every key's path (list items merged)."""
    if isinstance(obj, dict):
        return {p for k, v in obj.items() for p in ({f"{path}.{k}"} | _paths(v, f"{path}.{k}"))}
    if isinstance(obj, list):
        return set().union(*(_paths(x, path + "[]") for x in obj))
    return set()


def test_the_committed_sample_has_a_fresh_files_keys(cpu_calibration: Path) -> None:
    """tests/data's sample (whose keys test_json_keys_live.py checks against docs/clock.md
    without torch) is what calibrate writes now: regenerate it (tests/data/README.md)."""
    sample = ROOT / "tests" / "data" / "calibration" / "tiny-cpu.calibration.json"
    assert _paths(json.loads(cpu_calibration.read_text())) == \
        _paths(json.loads(sample.read_text()))


def test_replay_and_explain_use_the_cpu_calibration(cpu_calibration: Path) -> None:
    cal = str(cpu_calibration)
    r = runner.invoke(app, ["replay", "traces/shared-prefix.jsonl", "--model-config", TINY,
                            "--clock", "calibrated", "--calibration", cal, "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["clock"]["name"] == "calibrated" and d["clock"]["calibration"] == cal
    assert d["config"]["calibration"] == cal
    assert d["latency"]["uncalibrated"] is False
    r = runner.invoke(app, ["stats", "traces/shared-prefix.jsonl", "--model-config", TINY,
                            "--calibration", cal, "--json"])
    assert r.exit_code == 0, r.output
    src = json.loads(r.stdout)["source"]
    assert src["clock"]["name"] == "calibrated" and src["clock"]["calibration"] == cal
    r = runner.invoke(app, ["clock", "explain", "--model-config", TINY, "--calibration", cal,
                            "--case", "d=3*1@40", "--case", "p=16", "--json"])
    assert r.exit_code == 0, r.output
    e = json.loads(r.stdout)
    assert e["clock"] == "calibrated" and e["calibration"] == cal
    doc = check_calibration(json.loads(cpu_calibration.read_text()), cal)
    ref = RooflineClock(read_hf_config(load_hf_config(TINY), source=TINY), doc.gpu,
                        factors=doc.factors)
    for case, reqs in zip(e["cases"], ([(1, 40, False)] * 3, [(16, 16, True)])):
        assert case["step_ms"] == round(ref.step_ms(StepBatch(list(reqs))), 6)
        assert {c["source"] for c in case["components"]} == {"fitted"}
        assert case["clock"]["factors"]["kv_memory"] == doc.factors.kv_memory


def test_calibrate_without_a_gpu_exits_3_and_leaves_the_file(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: this checks the machine without one")
    out = tmp_path / "cal.json"
    out.write_text("old")
    p = _kvcli("calibrate", "--gpu", "--model", "llama-3.1-8b", "-o", str(out), interpret=False)
    assert p.returncode == 3
    assert p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        ("error: no CUDA device: `kvcli calibrate --gpu` needs an NVIDIA GPU "
        "(torch.cuda.is_available() is false)")]
    assert out.read_text() == "old" and os.listdir(tmp_path) == ["cal.json"]


@pytest.mark.parametrize(("args", "line"), [
    (["--model", "llama-3.1-8b"], ("error: option --gpu: calibration measures a GPU: give --gpu "
                                  "(kvcli calibrate --gpu --model M -o cal.json)")),
    (["--gpu", "--model", "mixtral-8x7b", "--device", "cpu"],
     ("error: option --model: mixtral-8x7b: calibration measures dense, unquantised attention "
     "models (no MoE, Mamba or quantised weights yet)")),
])
def test_calibrate_usage_errors_exit_2(tmp_path: Path, args: list[str], line: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # (tests/test_kernels.py sets it for the whole session when collected)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    r = runner.invoke(app, ["calibrate", "-o", str(tmp_path / "c.json"), *args])
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [line]
