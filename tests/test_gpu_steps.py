"""`kvcli bench --gpu --trace`: without CUDA it exits 3 before replaying anything; with
``--device cpu`` (which sets TRITON_INTERPRET=1) the whole path runs on a hybrid replay (capture,
pool, both strategies, both cache dtypes, every group), and its JSON says exactly what was read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HYBRID = ROOT / "tests" / "data" / "sched_fresh_hybrid" / "hseed209.trace.jsonl"
KEYS = {"kind", "version", "device", "sms", "torch", "triton", "trace", "model", "heads",
        "dtype", "kv_dtypes", "block_size", "num_blocks", "batch_defaults", "groups", "total_steps",
        "decode_steps", "sample_steps", "sample_rule", "copy_bytes_per_s", "bandwidth", "errors",
        "steps", "summary"}


def _kvcli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    e["PYTHONPATH"] = str(ROOT)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "kvcli", "bench", "--gpu", *args], cwd=ROOT,
                          env=e, capture_output=True, text=True, timeout=300, check=False)


def test_without_cuda_it_exits_3_before_the_replay() -> None:
    """The trace is read (bad input is exit 2 on any machine), then the device is checked,
    before any replay."""
    p = _kvcli("--trace", "no/such/trace.jsonl")
    assert p.returncode == 2 and p.stderr == "error: no/such/trace.jsonl: no such file\n"
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: this checks the machine without one")
    p = _kvcli("--trace", str(ROOT / "traces" / "shared-prefix.jsonl"))
    assert p.returncode == 3 and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no CUDA device: `kvcli bench --gpu`")


def test_bad_options_name_themselves() -> None:
    pytest.importorskip("torch")
    p = _kvcli("--trace", str(HYBRID), "--device", "tpu")
    assert p.returncode == 2 and p.stderr.strip() == "error: option --device: must be cuda or " \
        "cpu, got 'tpu'"


def test_the_replay_driven_run_on_cpu() -> None:
    pytest.importorskip("torch")
    from kernels.cases import distinct_blocks
    from kvcore.engine.decode_capture import capture_decode_steps
    from kvcore.engine.options import ReplayOptions

    # no TRITON_INTERPRET: --device cpu sets it (it stopped with "set TRITON_INTERPRET=1")
    p = _kvcli("--trace", str(HYBRID), "--device", "cpu", "--sample-steps", "1", "--json")
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(p.stdout)
    assert set(doc) == KEYS and doc["kind"] == "kvcli-gpu-steps" and doc["version"] == 1
    assert doc["errors"] == {}
    assert [g["sliding_window"] for g in doc["groups"]] == [None, 48, 48]
    assert all(g["timed"] for g in doc["groups"])
    cap = capture_decode_steps(str(HYBRID), ReplayOptions(), 1)
    assert [s["step"] for s in doc["steps"]] == [s.step for s in cap.steps]
    assert doc["decode_steps"] == cap.decode_steps and doc["num_blocks"] == 51
    assert doc["batch_defaults"] == {"max_num_batched_tokens": 2048, "max_num_seqs": 128,
                                     "from": "SchedulerConfig"}       # (no GPU's: a CPU)
    hq, hkv, d = 32, 8, 128                                  # the default layout (Llama-3.1-8B)
    for rec, s in zip(doc["steps"], cap.steps):
        assert rec["batch"] == len(s.seq_lens) and rec["kv_tokens"] == sum(s.seq_lens)
        assert len(rec["kernels"]) == 2 * 3                  # bf16 and fp8 x 3 groups
        for k in rec["kernels"]:
            w = k["window"]
            keys = sum(min(n, w) if w else n for n in s.seq_lens)
            elem = 1 if k["kv_dtype"] == "fp8" else 2
            blocks = sum((n - 1) // 16 - (max(0, n - w) if w else 0) // 16 + 1
                         for n in s.seq_lens)
            assert k["tokens_read"] == keys
            assert k["bytes"] == keys * hkv * d * 2 * elem + 2 * len(s.seq_lens) * hq * d * 2 \
                + blocks * 4 + 4 * len(s.seq_lens)
            distinct = distinct_blocks(s.block_tables[k["group"]], s.seq_lens, 16, w)
            for strategy in ("new", "old"):
                assert k[strategy]["time_us"] > 0 and k[strategy]["num_splits"] == 1
                assert k[strategy]["cycled_bytes"] == distinct * 16 * hkv * d * 2 * elem
        for kv in ("bf16", "fp8"):
            assert rec["layers_us"][kv] == pytest.approx(sum(
                k["new"]["time_us"] for k in rec["kernels"] if k["kv_dtype"] == kv))
    assert set(doc["summary"]) == {"bf16", "fp8"}
    assert doc["summary"]["fp8"]["new"]["kernels"] == 3


def test_device_cpu_after_the_kernels_were_defined_asks_for_the_interpreter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # --device cpu sets TRITON_INTERPRET itself (bench and calibrate share `device_for`), but
    # Triton reads it when a kernel is defined: too late once one is
    from typer.testing import CliRunner

    from kvcli.app import app

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setitem(sys.modules, "kernels.triton_decode", sys)
    r = CliRunner().invoke(app, ["calibrate", "-o", str(tmp_path / "c.json"), "--gpu",
                                 "--model", "llama-3.1-8b", "--device", "cpu"])
    assert r.exit_code == 2 and "TRITON_INTERPRET" not in os.environ
    assert r.stderr.strip().splitlines() == [
        ("error: option --device: cpu runs the Triton kernel under its interpreter: set "
         "TRITON_INTERPRET=1")]
