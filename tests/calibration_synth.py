"""Synthetic calibrations: measurements made by the roofline itself with chosen factors, so a
fit must give those factors back (tests/test_calibration*.py)."""

from __future__ import annotations

import dataclasses

from kvcore.clock.batch import StepBatch
from kvcore.clock.calibration import SCHEMA, measured_gpu, scope_geometry
from kvcore.clock.calibration_fit import one_layer
from kvcore.clock.factors import Factors
from kvcore.clock.roofline import RooflineClock
from kvcore.models import load_preset

CEILINGS = {"copy_tbps": 3.1, "gemm_bf16_tflops": 700.0, "gemm_fp8_tflops": None}
CHOSEN = Factors(gemm_compute=0.61, gemm_memory=0.73, attention_compute=0.44, kv_memory=0.87,
                 gemm_floor_us=3.5, attention_floor_us=7.25)
GPU = measured_gpu("NVIDIA H100 80GB HBM3", 80.0, CEILINGS["copy_tbps"],
                   CEILINGS["gemm_bf16_tflops"], None)
MODEL = "llama-3.1-8b"


def _ms(clock: RooflineClock, batch: StepBatch, group: str) -> float:
    return next(t.ms for t in clock.timed(batch) if t.component.name == group)


def gemm_us(m: int, n: int, k: int, f: Factors = CHOSEN) -> float:
    """One GEMM timed by the roofline: the lm_head group of a model whose hidden size is k
    and vocabulary n, with m requests (one launch, 2 m n k FLOPs, n k + m (k + n) elements)."""
    g = dataclasses.replace(one_layer(load_preset(MODEL)), hidden_size=k, vocab_size=n)
    b = StepBatch()
    b.add(1, 2, False, m)
    return 1000 * _ms(RooflineClock(g, GPU, factors=f), b, "lm_head")


def attention_us(new: int, ctx_after: int, count: int, f: Factors = CHOSEN) -> float:
    clock = RooflineClock(one_layer(load_preset(MODEL)), GPU, factors=f)
    b = StepBatch()
    b.add(new, ctx_after, new > 1, count)
    return 1000 * _ms(clock, b, "attention")


def tables() -> dict:
    shapes = [("qkv", 6144, 4096), ("o", 4096, 4096), ("gate_up", 28672, 4096),
              ("down", 4096, 14336), ("lm_head", 128256, 4096), ("tiny", 128, 128)]
    gemm = [{"op": op, "m": m, "n": n, "k": k, "us": gemm_us(m, n, k)}
            for op, n, k in shapes for m in (1, 16, 256, 4096)]
    dec = [{"batch": b, "ctx": c, "kv_bytes": b * c * 2 * 8 * 128 * 2,
            "us": attention_us(1, c, b)} for b in (1, 16, 64) for c in (128, 2048, 8192)]
    pre = [{"chunk": ch, "ctx": x, "us": attention_us(ch, x + ch, 1)}
           for ch in (256, 2048) for x in (0, 8192)]
    ew = [{"op": "rms_norm", "tokens": t, "bytes": 2 * t * 4096 * 2,
           "us": max(2.0, 2 * t * 4096 * 2 / (0.55 * CEILINGS["copy_tbps"] * 1e6))}
          for t in (1, 64, 1024, 8192)]
    return {"gemm": gemm, "decode_attention": dec, "decode_attention_skew": [],
            "prefill_attention": pre, "elementwise": ew, "allreduce": []}


def document(factors: dict, fit: dict) -> dict:
    return {"schema": SCHEMA, "created": "2026-12-02T00:00:00+00:00", "tool": "tests",
            "gpu": {"name": GPU.label, "mem_gb": 80.0},
            "scope": {"model": MODEL, "dtype": "bfloat16", "kv_dtype": "bfloat16", "tp": 1,
                      "block_size": 16, "geometry": scope_geometry(load_preset(MODEL))},
            "ceilings": dict(CEILINGS), "tables": tables(),
            "factors": {**factors, "c_step_us": 150.0, "c_req_us": 5.0, "cpu_terms": "default"},
            "fit": fit, "provenance": {"tables": "the roofline with chosen factors"}}
