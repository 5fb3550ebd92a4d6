"""Ahead-of-time compile of the decode kernels for sm_90 (Hopper) with no GPU: Triton's own
ptxas must accept them without spilling a register, as the GPU machine will compile them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _compile() -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_DEFAULT_FP_FUSION"] = "1"
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-m", "kernels.aot", "--json"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0 and "ptxas" in proc.stderr and "No such file" in proc.stderr:
        pytest.skip(f"triton's ptxas is missing: {proc.stderr.strip().splitlines()[-1]}")
    assert proc.stdout.strip(), proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def compiled() -> list[dict]:
    return _compile()


def test_no_kernel_spills_registers(compiled: list[dict]) -> None:
    assert len(compiled) >= 10
    spilled = [(r["name"], r["spills"]) for r in compiled if r["spills"]]
    assert not spilled


def test_default_config_fits_four_programs_per_sm(compiled: list[dict]) -> None:
    # 4 warps x 32 threads x regs x 4 programs must fit Hopper's 64K registers per SM, and the
    # shared memory of 4 programs its 228 KB.
    default = next(r for r in compiled if "tile_n=64, num_warps=4, num_stages=2" in r["name"]
                   and "split=False" in r["name"])
    assert default["regs"] <= 128
    assert 4 * default["shared"] <= 228 * 1024


def test_programs_per_sm_of_the_split_rule_fit(compiled: list[dict]) -> None:
    """`kernels.splits` counts PROGRAMS_PER_SM (bf16) and PROGRAMS_PER_SM_FP8 resident programs
    per SM; registers (granted 8 at a time per thread) and shared memory must allow them."""
    from kernels.splits import PROGRAMS_PER_SM, PROGRAMS_PER_SM_FP8

    for kv, n in (("kv=bf16", PROGRAMS_PER_SM), ("kv=fp8", PROGRAMS_PER_SM_FP8)):
        rows = [r for r in compiled if r["name"].startswith("stage1 bf16 " + kv)
                and "tile_n=64, num_warps=4, num_stages=2" in r["name"]]
        assert rows, kv
        for r in rows:
            regs = -(-r["regs"] // 8) * 8
            assert n * 128 * regs <= 65536 and n * r["shared"] <= 228 * 1024, (r["name"], n)


def test_kernels_use_tensor_cores_and_async_copies(compiled: list[dict]) -> None:
    stage1 = [r for r in compiled if r["name"].startswith("stage1")]
    assert all(r["mma"] for r in stage1)
    assert all(r["cp_async"] for r in stage1 if "num_stages=1" not in r["name"])
