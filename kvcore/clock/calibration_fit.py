"""From a calibration's measured tables to the roofline's factors (`kvcore.clock.fit`).

Each table row is turned into the work the roofline would time for it, counted by the same code
that times a step (`kvcore.clock.work`), so a factor fitted here means what it means in the
clock:

* ``gemm`` rows ``{op, m, n, k, us}``: one GEMM, F = 2 m n k, B = n k (weights) + m (k + n)
  (activations) at the model's byte size: what `work.py` bills per token and per weight.
* ``decode_attention`` rows ``{batch, ctx, kv_bytes, us}``: one layer of ``batch`` one-token
  decodes whose KV length (the new token included) is ``ctx``; ``prefill_attention`` rows
  ``{chunk, ctx, us}``: one layer of a ``chunk``-token prefill after ``ctx`` computed tokens.
  Their work is the clock's attention group of a one-layer, full-attention copy of the model.
  Both tables fit one (eta_attn, eta_kv, floor) triple, as the clock times both with it.
* ``elementwise`` rows ``{op, tokens, bytes, us}``: F = 0, B as measured (ideal bytes).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kvcore.clock.batch import StepBatch
from kvcore.clock.fit import Fitted, Point, fit, loo_mape
from kvcore.clock.work import WorkShape, aggregate, dot, work_groups, work_shape
from kvcore.models.geometry import ModelGeometry


def one_layer(g: ModelGeometry) -> ModelGeometry:
    """The model cut to one full-attention dense layer (what one measured launch runs)."""
    return dataclasses.replace(g, layer_kinds=("full",), sliding_window=None,
                               attention_chunk_size=None, moe_layers=(False,), num_experts=0)


def attention_work(ws1: WorkShape, batch: StepBatch) -> tuple[int, int]:
    """(FLOPs, bytes) of one attention layer for ``batch`` (``ws1`` from `one_layer`)."""
    x = aggregate(ws1, batch)
    gr = next(gr for gr in work_groups(ws1) if gr.kind == "attention")
    return dot(gr.flops, x), gr.bytes0 + dot(gr.bytes, x)


def gemm_point(row: dict, act: int) -> Point:
    m, n, k = row["m"], row["n"], row["k"]
    return Point(2 * m * n * k, n * k * act + m * (k + n) * act, row["us"])


def table_points(g: ModelGeometry, tables: dict[str, list[dict]], *, tp: int = 1
                 ) -> dict[str, list[Point]]:
    ws1 = work_shape(one_layer(g), tp=tp)
    out: dict[str, list[Point]] = {
        "gemm": [gemm_point(r, ws1.act) for r in tables["gemm"]]}
    dec = []
    for r in tables["decode_attention"]:
        b = StepBatch()
        b.add(1, r["ctx"], False, r["batch"])
        dec.append(Point(*attention_work(ws1, b), r["us"]))
    out["decode_attention"] = dec
    pre = []
    for r in tables["prefill_attention"]:
        b = StepBatch()
        b.add(r["chunk"], r["ctx"] + r["chunk"], True)
        pre.append(Point(*attention_work(ws1, b), r["us"]))
    out["prefill_attention"] = pre
    out["elementwise"] = [Point(0, r["bytes"], r["us"]) for r in tables["elementwise"]]
    return out


def fastest_gemm_tflops(rows: list[dict]) -> float:
    """The best rate a measured GEMM reached (TFLOP/s). A peak is at least that: the tiny
    grid's 128^3 probe gave a CPU 0.0 TF while a large model's GEMMs ran 100-1300x faster, and
    eta_gemm_c then failed the file's own bounds (exit 2 after the measuring)."""
    return max((2 * r["m"] * r["n"] * r["k"] / r["us"] / 1e6 for r in rows), default=0.0)


def fit_tables(g: ModelGeometry, tables: dict[str, list[dict]], ceilings: dict, *,
               tp: int = 1) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the file's ``factors`` without its CPU terms, its ``fit``) from measured tables."""
    pts = table_points(g, tables, tp=tp)
    peak = ceilings["gemm_bf16_tflops"] * 1e6      # FLOP/us
    bw = ceilings["copy_tbps"] * 1e6               # bytes/us
    gemm = fit(pts["gemm"], peak, bw)
    attn_pts = pts["decode_attention"] + pts["prefill_attention"]
    attn = fit(attn_pts, peak, bw)
    ew = fit(pts["elementwise"], peak, bw)
    n_dec = len(pts["decode_attention"])
    mape = {
        "gemm": _rounded(loo_mape(pts["gemm"], peak, bw)),
        "decode_attention": _rounded(loo_mape(attn_pts, peak, bw, range(n_dec))),
        "prefill_attention": _rounded(loo_mape(attn_pts, peak, bw,
                                               range(n_dec, len(attn_pts)))),
        "elementwise": _rounded(loo_mape(pts["elementwise"], peak, bw)),
    }
    in_sample = {"gemm": _mape(pts["gemm"], gemm, peak, bw),
                 "attention": _mape(attn_pts, attn, peak, bw),
                 "elementwise": _mape(pts["elementwise"], ew, peak, bw)}
    factors = {"eta_gemm_c": gemm.compute, "eta_gemm_m": gemm.memory,
               "eta_attn": attn.compute, "eta_kv": attn.memory,
               "eta_elementwise": ew.memory,
               "t_min_us": {"gemm": gemm.floor_us, "attention": attn.floor_us,
                            "elementwise": ew.floor_us}}
    bound = {name: dict(zip(("floor", "compute", "memory"), f.bound))
             for name, f in (("gemm", gemm), ("attention", attn), ("elementwise", ew))}
    return factors, {"loo_mape_pct": mape, "in_sample_mape_pct": in_sample,
                     "points": {k: len(v) for k, v in pts.items()}, "bound_points": bound,
                     "undetermined": undetermined(bound)}


# The clock's factors and the (fitted class, term) whose points determine each. A factor no
# measured point binds keeps the fit's starting value, a lower bound: a grid without a
# compute-bound attention point (the tiny grid) gave an eta_attn 600x too small, so steps 16-33x
# too slow, with an in-sample error of 0 %. The file names such factors; the clock warns.
_DETERMINED_BY = {"eta_gemm_c": ("gemm", "compute"), "eta_gemm_m": ("gemm", "memory"),
                  "eta_attn": ("attention", "compute"), "eta_kv": ("attention", "memory")}


def undetermined(bound: dict[str, dict[str, int]]) -> list[str]:
    """The clock's factors that no measured point binds (`fit.bound_points`)."""
    return [k for k, (cls, term) in _DETERMINED_BY.items() if not bound[cls][term]]


def _mape(points: list[Point], f: Fitted, peak: float, bw: float) -> float:
    from kvcore.clock.fit import predict

    return round(100.0 * sum(abs(predict(p, f, peak, bw) - p.us) / p.us for p in points)
                 / len(points), 4)


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 4)
