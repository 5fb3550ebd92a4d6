"""`benchmarks/calibration_check.py` (the GPU session's one script) on CPU: calibrate, then
time held-out synthetic forward steps and report MAPE per regime against the calibrated clock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvcore.clock.batch import StepBatch
from kvcore.clock.calibrated import CalibratedClock
from kvcore.clock.calibration import read_calibration
from kvcore.models import load_hf_config, read_hf_config

ROOT = Path(__file__).resolve().parents[1]
TINY = "tests/data/calibration/tiny-llama.config.json"


def test_calibration_check_runs_on_cpu(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "benchmarks/calibration_check.py", "--device", "cpu",
                        "--grid", "tiny", "--model-config", TINY, "--out-dir", str(tmp_path)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
                       check=False)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("llama on cpu (")
    assert [ln.split()[0] for ln in lines[1:]] == ["decode-heavy", "prefill-heavy", "mixed"]
    assert sorted(os.listdir(tmp_path)) == ["calibration-llama.json", "check-llama.json"]
    cal = read_calibration(str(tmp_path / "calibration-llama.json"))
    res = json.loads((tmp_path / "check-llama.json").read_text())
    clock = CalibratedClock(read_hf_config(load_hf_config(TINY), source=TINY), cal)
    # each held-out step's prediction is the calibrated clock's GPU time for that batch
    for regime, n in (("decode-heavy", 2), ("prefill-heavy", 2), ("mixed", 1)):
        steps = res["regimes"][regime]["steps"]
        assert len(steps) == n
        for s in steps:
            b = StepBatch()
            for kv in s["decode_kv"]:
                b.add(1, kv, False, s["decodes"])
            for c, x in s["prefills"]:
                b.add(c, c + x, True)
            assert s["predicted_ms"] == pytest.approx(sum(t.ms for t in clock.timed(b)))
            assert s["measured_ms"] > 0
        mape = sum(abs(s["error_pct"]) for s in steps) / n
        assert res["regimes"][regime]["mape_pct"] == pytest.approx(mape)


def test_synthetic_step_attention_is_right() -> None:
    """The step's paged decode and chunk attention compute what plain attention does (so
    the time measured is of real work on the right data)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    os.environ["TRITON_INTERPRET"] = "1"
    from kvcli.calibration.micro import causal_sdpa

    q = torch.randn(1, 2, 3, 8, dtype=torch.float32)
    k = torch.randn(1, 2, 7, 8)
    v = torch.randn(1, 2, 7, 8)
    out = causal_sdpa(q, k, v, 4)
    for i in range(3):          # query i sits at position 4 + i: keys 0 .. 4 + i
        s = (q[0, :, i, None] @ k[0, :, :5 + i].transpose(-1, -2)) / 8 ** 0.5
        ref = (torch.softmax(s, -1) @ v[0, :, :5 + i])[:, 0]
        assert torch.allclose(out[0, :, i], ref, atol=1e-5)
    with pytest.raises(AssertionError):     # (a top-left causal mask would differ)
        s = (q[0, :, 0, None] @ k[0, :, :1].transpose(-1, -2))
        assert torch.allclose(out[0, :, 0], (torch.softmax(s, -1) @ v[0, :, :1])[:, 0])


def test_calibration_check_without_cuda_exits_3(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: this checks the machine without one")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    p = subprocess.run([sys.executable, "benchmarks/calibration_check.py", "--out-dir",
                        str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300, check=False)
    assert p.returncode == 3
    assert p.stderr.strip().splitlines() == [
        ("error: no CUDA device: `kvcli calibrate --gpu` needs an NVIDIA GPU "
        "(torch.cuda.is_available() is false)")]
    assert os.listdir(tmp_path) == []
