"""The tables `kvcli calibrate` shows: the ceilings and the fitted factors with each table's
leave-one-out error (the file itself is the JSON)."""

from __future__ import annotations

from kvcli.output import Table, View


def calibration_view(doc: dict) -> View:
    c, f, fit = doc["ceilings"], doc["factors"], doc["fit"]
    loo = fit["loo_mape_pct"]
    fp8 = c["gemm_fp8_tflops"]
    ceilings = Table(f"{doc['gpu']['name']}: measured ceilings",
                     ("copy TB/s (read + write)", "GEMM TF (model dtype)", "FP8 GEMM TF"),
                     [(round(c["copy_tbps"], 4), round(c["gemm_bf16_tflops"], 3),
                       "-" if fp8 is None else round(fp8, 3))])

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    rows = [("gemm", f"{f['eta_gemm_c']:.4g}", f"{f['eta_gemm_m']:.4g}",
             f"{f['t_min_us']['gemm']:.4g}", fit["points"]["gemm"], pct(loo["gemm"])),
            ("decode attention", f"{f['eta_attn']:.4g}", f"{f['eta_kv']:.4g}",
             f"{f['t_min_us']['attention']:.4g}", fit["points"]["decode_attention"],
             pct(loo["decode_attention"])),
            ("prefill attention", "(same)", "(same)", "(same)",
             fit["points"]["prefill_attention"], pct(loo["prefill_attention"])),
            ("elementwise", "-", f"{f['eta_elementwise']:.4g}",
             f"{f['t_min_us']['elementwise']:.4g}", fit["points"]["elementwise"],
             pct(loo["elementwise"]))]
    factors = Table(f"{doc['scope']['model']} (tp {doc['scope']['tp']}): fitted factors",
                    ("kernel class", "eta compute", "eta memory", "floor us", "points",
                     "LOO MAPE %"), rows,
                    caption="eta: fraction of the measured ceilings; CPU terms "
                            f"{f['cpu_terms']} ({f['c_step_us']} us a step, {f['c_req_us']} us "
                            "a request)")
    return View(doc, tables=[ceilings, factors])
