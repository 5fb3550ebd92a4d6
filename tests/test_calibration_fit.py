"""The calibration fit recovers the factors the roofline used to make its measurements, and the
calibrated clock built from them times steps as that roofline does."""

from __future__ import annotations

import pytest

from kvcore.clock.batch import StepBatch
from kvcore.clock.calibrated import CalibratedClock
from kvcore.clock.calibration import check_calibration
from kvcore.clock.calibration_fit import fit_tables
from kvcore.clock.fit import Point, fit, loo_mape
from kvcore.clock.roofline import RooflineClock
from kvcore.models import load_preset
from tests.calibration_synth import CEILINGS, CHOSEN, GPU, MODEL, document, tables


def _fitted():
    return fit_tables(load_preset(MODEL), tables(), CEILINGS)


def test_fit_recovers_the_chosen_factors_exactly():
    factors, fit_doc = _fitted()
    assert factors["eta_gemm_c"] == pytest.approx(0.61, rel=1e-12)
    assert factors["eta_gemm_m"] == pytest.approx(0.73, rel=1e-12)
    assert factors["eta_attn"] == pytest.approx(0.44, rel=1e-12)
    assert factors["eta_kv"] == pytest.approx(0.87, rel=1e-12)
    assert factors["eta_elementwise"] == pytest.approx(0.55, rel=1e-12)
    assert factors["t_min_us"] == pytest.approx({"gemm": 3.5, "attention": 7.25,
                                                 "elementwise": 2.0}, rel=1e-12)
    # the roofline's own data: every held-out point predicted exactly
    assert all(v == pytest.approx(0, abs=1e-8) for v in fit_doc["loo_mape_pct"].values())
    assert fit_doc["points"] == {"gemm": 24, "decode_attention": 9, "prefill_attention": 4,
                                 "elementwise": 4}
    assert fit_doc["undetermined"] == []
    # the tiny 128 x 128 GEMM's 4 M at the floor, M 1 and 16 memory bound, 256 and 4096
    # compute bound; attention: 4 decodes at the 7.25 us floor, 3 prefills compute bound;
    # elementwise: 1 and 64 tokens at the 2 us floor
    assert fit_doc["bound_points"] == {"gemm": {"floor": 4, "compute": 10, "memory": 10},
                                       "attention": {"floor": 4, "compute": 3, "memory": 6},
                                       "elementwise": {"floor": 2, "compute": 0, "memory": 2}}


def test_a_factor_no_point_binds_is_named_and_warned_about():
    """The tiny grid's shapes (no compute-bound attention point) on a roofline GPU: eta_attn
    stays the fit's starting value, a lower bound far below the true 0.44, at 0 % fit error.
    The file says so, and the calibrated clock warns beside its times."""
    t = tables()
    t["decode_attention"] = [r for r in t["decode_attention"] if r["batch"] == 1]
    t["prefill_attention"] = []
    factors, fit_doc = fit_tables(load_preset(MODEL), t, CEILINGS)
    assert fit_doc["undetermined"] == ["eta_attn"]
    assert fit_doc["bound_points"]["attention"]["compute"] == 0
    assert factors["eta_attn"] < 0.44 / 25 and fit_doc["in_sample_mape_pct"]["attention"] == 0
    cal = check_calibration(document(factors, fit_doc), "cal.json")
    clock = CalibratedClock(load_preset(MODEL), cal)
    assert clock.uncalibrated_warning() == (
        "calibration cal.json: no measured point determined eta_attn (a lower bound: times that "
        "depend on it are too long; calibrate with --grid full)")
    good = CalibratedClock(load_preset(MODEL), check_calibration(document(*_fitted()), "ok"))
    assert good.uncalibrated_warning() is None


def test_the_synthetic_data_exercises_every_term():
    # (a fit that never sees a floor-, memory- or compute-bound point could not be checked)
    t = tables()
    floor_bound = [r for r in t["gemm"] if r["us"] == pytest.approx(3.5)]
    assert {r["op"] for r in floor_bound} == {"tiny"}
    assert min(r["us"] for r in t["decode_attention"]) == pytest.approx(7.25)
    big = next(r for r in t["gemm"] if r["m"] == 4096 and r["op"] == "gate_up")
    assert big["us"] == pytest.approx(2 * 4096 * 28672 * 4096 / (0.61 * 700e6))


def test_fit_with_noise_is_close_and_a_naive_fit_is_not():
    # 2% multiplicative noise, alternating: the fit stays within 2%
    pts = [Point(2 * m * 4096 * 4096, 4096 * 4096 * 2 + m * 8192 * 2, 0.0)
           for m in (1, 2, 4, 8, 64, 512, 2048, 4096, 8192)]
    peak, bw = 700e6, 3.1e6
    true = [max(3.5, p.flops / (0.61 * peak), p.bytes / (0.73 * bw)) for p in pts]
    noisy = [Point(p.flops, p.bytes, t * (1.02 if i % 2 else 0.98))
             for i, (p, t) in enumerate(zip(pts, true))]
    f = fit(noisy, peak, bw)
    assert f.compute == pytest.approx(0.61, rel=0.021)
    assert f.memory == pytest.approx(0.73, rel=0.021)
    assert loo_mape(noisy, peak, bw) < 5.0


def test_calibrated_clock_times_steps_as_the_roofline_with_those_factors():
    factors, fit_doc = _fitted()
    cal = check_calibration(document(factors, fit_doc), "synthetic.json")
    g = load_preset(MODEL)
    clock = CalibratedClock(g, cal)
    ref = RooflineClock(g, GPU, factors=CHOSEN)
    for reqs in ([(1, 4097, False)] * 64, [(2048, 2048, True)],
                 [(512, 16896, True)] + [(1, 4097, False)] * 255, [(1, 130, False)]):
        b = StepBatch(list(reqs))
        assert clock.step_ms(b) == pytest.approx(ref.step_ms(b), rel=1e-9)
    b = StepBatch()
    b.add(1, 4097, False, 64)
    # 64 x 4,096 decode on these ceilings: KV 34.4 GB at 0.87 x 3.1 TB/s dominates
    assert ref.step_ms(b) == pytest.approx(sum(t.ms for t in ref.timed(b)) + 0.15)
    assert clock.describe()["name"] == "calibrated"
    assert clock.uncalibrated is False


def test_a_probe_slower_than_the_models_gemms_is_no_ceiling():
    """`kvcli calibrate --device cpu --grid tiny --model llama-3.1-8b`: the 128^3 probe's peak
    was far below what the model's GEMMs reached, the fit's eta_gemm_c came out 130-1300 and the
    file failed its own bounds (exit 2 after the measuring). The peak is raised to the fastest
    GEMM measured, so eta_gemm_c is at most 1."""
    from kvcore.clock.calibration_fit import fastest_gemm_tflops
    from kvcore.errors import InputError

    t = tables()
    best = max(2 * r["m"] * r["n"] * r["k"] / r["us"] / 1e6 for r in t["gemm"])
    assert fastest_gemm_tflops(t["gemm"]) == best
    assert best == pytest.approx(0.61 * 700.0, rel=1e-9)    # a compute-bound point's rate
    assert fastest_gemm_tflops([]) == 0.0
    slow = {**CEILINGS, "gemm_bf16_tflops": best / 500}
    factors, fit_doc = fit_tables(load_preset(MODEL), t, slow)
    assert factors["eta_gemm_c"] == pytest.approx(500, rel=1e-9)
    doc = {**document(factors, fit_doc), "ceilings": slow}
    with pytest.raises(InputError, match="eta_gemm_c': must be from 1e-06 to 100"):
        check_calibration(doc, "c.json")
    factors, _ = fit_tables(load_preset(MODEL), t, {**slow, "gemm_bf16_tflops": best})
    assert factors["eta_gemm_c"] == pytest.approx(1.0, rel=1e-9)
