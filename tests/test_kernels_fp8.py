"""The fp8 (e4m3, per-tensor scales) KV cache under TRITON_INTERPRET=1 (CPU): the kernel against
the float64 reference over the same stored bytes, its bytes (half of bf16's), and the format's
own error against the unquantized values (`kernels.fp8.output_sigma`).

Tolerances: the kernel against float64 over the stored fp8 values uses q's dtype's tolerance
(`kernels.checks.TOLERANCE`): e4m3 -> bf16/fp16 is exact and the scales are fp32 multipliers, so
an fp8 cache adds no kernel error. Against the unquantized values the fp8 output may be off by
e4m3's rounding, propagated to first order: |Δ| <= 6 σ (`output_sigma`, rounding errors as
independent uniform ones within half an e4m3 spacing) + the bf16 output's own tolerance.
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before kernels.triton_decode is imported

import random

import pytest
import torch

from kernels import paged_decode, paged_decode_reference
from kernels.checks import FP8_SCALES, TOLERANCE, Spec, check, make_inputs
from kernels.fp8 import E4M3, half_spacing, output_sigma, quantize

SEED = int.from_bytes(os.urandom(3), "little")

FIXED = [
    pytest.param(Spec(8, 2, 64, "bf16", 16, (0, 1, 15, 16, 17, 100), None, 1, kv_dtype="fp8"),
                 id="bf16q-gqa4"),
    pytest.param(Spec(4, 4, 32, "fp16", 32, (0, 1, 31, 32, 33, 130), None, 1, kv_dtype="fp8"),
                 id="fp16q-mha-bs32"),
    pytest.param(Spec(8, 1, 32, "fp32", 16, (1, 17, 90), None, 1, kv_dtype="fp8"),
                 id="fp32q-mqa"),
    pytest.param(Spec(8, 2, 64, "bf16", 16, (0, 1, 17, 90, 200), 24, 1, kv_dtype="fp8"),
                 id="window24"),
    pytest.param(Spec(8, 2, 64, "bf16", 16, (0, 1, 17, 90, 200), 40, 3, kv_dtype="fp8"),
                 id="window40-split3-fused"),
    pytest.param(Spec(8, 2, 64, "fp16", 16, (300, 3), None, 4, kv_dtype="fp8", merge="kernel"),
                 id="split4-kernel-merge"),
    pytest.param(Spec(6, 2, 80, "bf16", 16, (77, 3), None, 2, strided=False, kv_dtype="fp8"),
                 id="head-dim-80-contiguous"),
]


@pytest.mark.parametrize("spec", FIXED)
def test_fp8_kernel_matches_float64_over_the_stored_values(spec: Spec) -> None:
    r = check(spec, "cpu", seed=SEED)
    assert r.ok, f"seed {SEED}: {r}"


def _random_spec(rng: random.Random) -> Spec:
    hkv = rng.choice((1, 2, 4))
    hq = hkv * rng.choice((1, 2, 3, 4))
    lens = tuple(rng.choice((0, 1, rng.randint(1, 40), rng.randint(40, 220)))
                 for _ in range(rng.randint(1, 4)))
    return Spec(hq, hkv, rng.choice((32, 64)), rng.choice(("bf16", "fp16")),
                rng.choice((16, 32)), lens, rng.choice((None, None, 1, 20, 70)),
                rng.choice((1, 1, 2, 5)), kv_dtype="fp8", merge=rng.choice(("fused", "kernel")))


@pytest.mark.parametrize("i", range(4))
def test_fp8_kernel_on_random_shapes(i: int) -> None:
    spec = _random_spec(random.Random(SEED * 10 + i))
    r = check(spec, "cpu", seed=SEED + i)
    assert r.ok, f"seed {SEED}, {spec}: {r}"


def test_the_check_sees_a_wrong_scale() -> None:
    """The scales change the answer: swapped, the kernel is far outside the tolerance."""
    spec = Spec(8, 2, 32, "bf16", 16, (5, 70), None, 1, kv_dtype="fp8")
    x = make_inputs(spec, seed=SEED)
    k_scale, v_scale = FP8_SCALES
    right = paged_decode(*x, k_scale=k_scale, v_scale=v_scale).double()
    swapped = paged_decode(*x, k_scale=v_scale, v_scale=k_scale).double()
    exact = paged_decode_reference(x.q.double(), *x[1:], k_scale=k_scale, v_scale=v_scale,
                                   compute_dtype=torch.float64)
    atol, rtol = TOLERANCE["bf16"]
    assert ((right - exact).abs() <= atol + rtol * exact.abs()).all()
    assert ((swapped - exact).abs() > 10 * (atol + rtol * exact.abs())).any()


@pytest.mark.parametrize("window,splits", [(None, 1), (None, 3), (24, 2)])
def test_fp8_reads_exactly_half_the_kv_bytes_of_bf16(window: int | None, splits: int) -> None:
    from kernels.bytecount import count_bytes

    lens = (0, 1, 15, 16, 17, 64, 100)
    loaded = {}
    for kv in (None, "fp8"):
        spec = Spec(8, 2, 64, "bf16", 16, lens, window, splits, kv_dtype=kv)
        x = make_inputs(spec, seed=SEED)
        with count_bytes({"kv": x.k_cache, "q": x.q, "tables": x.block_tables}) as c:
            paged_decode(*x, sliding_window=window, num_splits=splits,
                         k_scale=spec.scales[0], v_scale=spec.scales[1])
        loaded[kv] = c.loaded
    keys = sum(min(n, window) if window else n for n in lens)
    assert loaded["fp8"]["kv"] == keys * 2 * 64 * 2 * 1            # K and V, one byte each
    assert 2 * loaded["fp8"]["kv"] == loaded[None]["kv"]
    assert loaded["fp8"]["q"] == loaded[None]["q"] == 7 * 8 * 64 * 2 * splits
    assert loaded["fp8"]["tables"] == loaded[None]["tables"] == keys * 2 * 4


def test_quantize_is_vllms_write_and_half_spacing_bounds_its_error() -> None:
    x = torch.randn(4096, generator=torch.Generator().manual_seed(SEED)) * 3
    x = torch.cat([x, torch.tensor([0.0, 1e-4, -1e-4, 2.0 ** -7, 20.0, -22.0])])
    s = 0.05
    stored = quantize(x, s)
    assert stored.dtype == E4M3
    assert torch.equal(stored.view(torch.uint8), (x / s).to(E4M3).view(torch.uint8))
    err = (stored.double() - x.double() / s).abs()
    assert (err <= half_spacing(stored) * (1 + 1e-12)).all()
    # the bound is attained within a factor 2 somewhere (it is not a loose constant)
    assert (err > 0.5 * half_spacing(stored)).any()
    assert half_spacing(torch.tensor([1.0, 1.5, 0.01, 448.0]).to(E4M3)).tolist() == \
        [2.0 ** -4, 2.0 ** -4, 2.0 ** -10, 2.0 ** 4]
    assert quantize(torch.tensor([1e6, -1e6]), 1.0).double().tolist() == [448.0, -448.0]


@pytest.mark.parametrize("window", [None, 30])
def test_fp8_output_is_within_e4m3s_error_of_the_unquantized_answer(window: int | None) -> None:
    """The same random KV in bf16 and stored as fp8: the kernel's fp8 output is within 6 σ of
    the float64 answer over the unquantized values, and the error is real (not 0)."""
    bf = Spec(8, 2, 64, "bf16", 16, (1, 40, 200), window, 2)
    x = make_inputs(bf, seed=SEED)
    k_scale, v_scale = FP8_SCALES
    k8, v8 = quantize(x.k_cache.float(), k_scale), quantize(x.v_cache.float(), v_scale)
    out = paged_decode(x.q, k8, v8, x.block_tables, x.seq_lens, sliding_window=window,
                       k_scale=k_scale, v_scale=v_scale, num_splits=2).double()
    exact = paged_decode_reference(x.q.double(), *x[1:], sliding_window=window,
                                   compute_dtype=torch.float64)
    sigma = output_sigma(x.q, k8, v8, k_scale, v_scale, x.block_tables, x.seq_lens,
                         sliding_window=window)
    atol, rtol = TOLERANCE["bf16"]
    err = (out - exact).abs()
    assert (err <= 6 * sigma + atol + rtol * exact.abs()).all(), f"seed {SEED}"
    assert err.max() > 1e-3                            # fp8 does lose precision
    assert sigma.max() < 0.1 * exact.abs().max()       # and the bound is not vacuous
