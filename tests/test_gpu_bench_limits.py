"""`kvcli bench --gpu`'s hostile inputs: a bad --device is exit 2 before anything (as
`kvcli calibrate`), on any machine; --device cpu refuses a pool past the host's memory (exit 2);
a run whose timings failed is exit 1 once its results are out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app


@pytest.mark.parametrize("value", ["bogus", "cuda:7", "CUDA", ""])
@pytest.mark.parametrize("trace", [False, True])
def test_a_bad_device_is_exit_2_before_anything(value: str, trace: bool,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """It said "no CUDA device" (exit 3) without --trace, and without torch with it."""
    monkeypatch.setitem(sys.modules, "torch", None)     # a machine without torch: still 2
    args = ["bench", "--gpu", "--device", value] + (["--trace", "no/such.jsonl"] if trace else [])
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"error: option --device: must be cuda or cpu, got {value!r}")


def test_cuda_n_says_how_to_pick_a_gpu() -> None:
    r = CliRunner().invoke(app, ["bench", "--gpu", "--device", "cuda:1"])
    assert r.exit_code == 2 and "CUDA_VISIBLE_DEVICES=1 and --device cuda" in r.stderr


def test_calibrate_checks_the_name_before_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    from kvcli.calibration.run import device_for
    from kvcore.errors import InputError

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(InputError, match="must be cuda or cpu"):
        device_for("tpu")


def test_a_valid_device_without_cuda_stays_exit_3() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    r = CliRunner().invoke(app, ["bench", "--gpu", "--device", "cuda"])
    assert r.exit_code == 3 and r.stderr.strip().splitlines()[-1].startswith(
        "error: no CUDA device")


# -- --device cpu: the pool's host memory; a run whose timings failed is exit 1 ----------------

ROOT = Path(__file__).resolve().parents[1]
CHAT = ROOT / "traces" / "multiturn-chat.jsonl"


def _bench(*args: str, patch: str = "", limit_gib: int = 8) -> subprocess.CompletedProcess:
    """`kvcli bench --gpu ARGS` in a child held to ``limit_gib`` of address space (the code
    before the check asked torch for the whole pool: never let it take the machine), after
    running ``patch``."""
    import resource

    def cap() -> None:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        want = limit_gib << 30
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        if soft == resource.RLIM_INFINITY or soft > want:
            resource.setrlimit(resource.RLIMIT_AS, (want, hard))

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    code = f"{patch}\nimport sys\nsys.argv = ['kvcli', 'bench', '--gpu', *{list(args)!r}]\n" \
        "from kvcli.app import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False, preexec_fn=cap)


def _lines(trace: Path, num_blocks: int, n: int = 4) -> str:
    head = CHAT.read_text().splitlines()[:n]
    return "\n".join([json.dumps({"config": {"num_blocks": num_blocks}}), *head]) + "\n"


def test_a_pool_past_host_memory_is_refused_before_it_is_allocated(tmp_path: Path) -> None:
    """2,000,000 blocks asked torch for 131 GB (bf16) and 262 GB (fp8): each failed under a
    limit, the command exited 0 (without one it could take the machine)."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    trace = tmp_path / "big.jsonl"
    trace.write_text(_lines(CHAT, 2_000_000))
    p = _bench("--trace", str(trace), "--device", "cpu", "--sample-steps", "1")
    assert p.returncode == 2, p.stderr[-2000:]
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {trace}:1: field 'num_blocks': --device cpu allocates "
                               "the replay's whole KV pool on the host: 2,000,000 blocks x 16 "
                               "tokens x 8 KV heads x 128 need ~305.2 GiB for its fp8 copy; "
                               "lower num_blocks (its config line)")


def test_the_pool_bytes() -> None:
    from kvcli.gpu_steps_cpu import pool_host_bytes

    values = 10 * 2 * 16 * 8 * 128
    assert pool_host_bytes(10, 16, 8, 128, "bf16") == {"bf16": 2 * values, "fp8": 5 * values}
    assert pool_host_bytes(10, 16, 8, 128, "fp32")["bf16"] == 4 * values


BOOM = """
import kvcli.gpu_steps as g
def boom(doc, cap, timed, kv, *a):
    if kv in {kinds!r}:
        raise RuntimeError("CUDA out of memory (a stand-in)")
    return real(doc, cap, timed, kv, *a)
real, g._time_dtype = g._time_dtype, boom
"""


@pytest.mark.parametrize("kinds", [("bf16", "fp8")])
def test_a_run_whose_timings_failed_exits_1_after_its_results(tmp_path: Path, kinds) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    trace = tmp_path / "small.jsonl"
    trace.write_text(_lines(CHAT, 256))
    p = _bench("--trace", str(trace), "--device", "cpu", "--sample-steps", "1", "--json",
               patch=BOOM.format(kinds=set(kinds)))
    assert p.returncode == 1, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert set(doc["errors"]) == set(kinds)
    assert p.stderr.strip().splitlines()[-1] == (
        "error: 2 of 2 cache dtype(s) failed (bf16, fp8): no timings for them (the JSON's "
        "errors say why)")


def test_failures_of_the_shipped_tables_run() -> None:
    """`kvcli bench --gpu` (`kernels.bench`): its ``ok`` false was exit 0 (python -m
    kernels.bench: 1)."""
    from kvcli.gpu_bench import failures

    doc = {"ok": False, "cases": [{"case": "a", "error": "boom", "correct": False},
                                  {"case": "b", "correct": False}, {"case": "c", "correct": True}],
           "device_check": {"failed": 0}}
    assert failures(doc) == ("2 of 3 case(s) failed (1 raised: the JSON's cases[].error; the "
                             "others read wrong: correct false)")
    assert failures({"ok": True, "cases": []}) is None
    assert failures({"kind": "kvcli-gpu-steps", "errors": {}, "kv_dtypes": ["bf16"]}) is None


def test_bench_gpu_exits_1_when_the_run_is_not_ok(monkeypatch: pytest.MonkeyPatch) -> None:
    import kvcli.gpu_bench as gb
    from kvcli.output import View

    doc = {"ok": False, "cases": [{"case": "a", "error": "boom", "correct": False}]}
    monkeypatch.setattr(gb, "run_gpu_bench", lambda **kw: View(doc))
    r = CliRunner().invoke(app, ["bench", "--gpu", "--json"])
    assert r.exit_code == 1 and json.loads(r.stdout) == doc
    assert r.stderr.strip().splitlines() == [
        ("error: 1 of 1 case(s) failed (1 raised: the JSON's cases[].error; the others read "
         "wrong: correct false)")]


# -- --device cpu: at most 32 steps, and the kernels and an estimate said first -----------------

def test_more_sample_steps_than_the_cpu_cap_is_exit_2_before_the_replay(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """--sample-steps 10000 under the interpreter ran for days (~6-20 s a kernel), silently."""
    monkeypatch.setitem(sys.modules, "torch", None)     # before torch, the trace, the replay
    r = CliRunner().invoke(app, ["bench", "--gpu", "--trace", "no/such.jsonl", "--device",
                                 "cpu", "--sample-steps", "33"])
    assert r.exit_code == 2 and r.stderr.strip().splitlines() == [
        ("error: option --sample-steps: --device cpu times at most 32 steps, got 33 (each "
         "kernel takes seconds under Triton's interpreter; time more on a GPU, --device cuda)")]


def test_the_gpu_keeps_any_count() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device would time 100,000 steps; the cap is the CPU's only")
    r = CliRunner().invoke(app, ["bench", "--gpu", "--trace", str(CHAT), "--device", "cuda",
                                 "--sample-steps", "100000"])
    assert r.exit_code in (0, 3) and "--sample-steps" not in r.stderr


def test_the_cpu_run_says_its_kernels_and_an_estimate_first(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    trace = tmp_path / "small.jsonl"
    trace.write_text(_lines(CHAT, 256))
    p = _bench("--trace", str(trace), "--device", "cpu", "--sample-steps", "2", "--json",
               patch=BOOM.format(kinds={"bf16", "fp8"}))     # (the estimate, not the timings)
    lines = p.stderr.splitlines()
    said = [x for x in lines if x.startswith("--device cpu: ")]
    assert len(said) == 1 and lines.index(said[0]) == 1, lines
    assert said[0].startswith("--device cpu: 8 kernel(s) to time (2 step(s) x 1 group(s) x 2 "
                              "cache dtypes x 2 strategies) under Triton's interpreter: about ")
