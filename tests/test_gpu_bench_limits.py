"""`kvcli bench --gpu`'s hostile inputs: a bad --device is exit 2 before anything (as
`kvcli calibrate`), on any machine."""

from __future__ import annotations

import sys

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
