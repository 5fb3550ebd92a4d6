"""`kvcli clock gpus` (the GPU presets with their sources) and `kvcli clock explain` (one
step's time per kernel group under the roofline clock, vLLM's own count beside it)."""

from __future__ import annotations

from typing import Annotated

import typer

from kvcore.vllm_values import KV_CACHE_DTYPES


def register(app: typer.Typer) -> None:
    clock_app = typer.Typer(help="The simulated clock: GPU presets and step-time breakdowns.",
                            no_args_is_help=True)
    app.add_typer(clock_app, name="clock")

    @clock_app.command("gpus")
    def gpus(as_json: Annotated[bool, typer.Option("--json", help="JSON on stdout.")] = False,
             ) -> None:
        """The GPU presets: dense datasheet peaks and where each number comes from."""
        from kvcli import output
        from kvcore.clock.gpus import GPUS

        def go() -> None:
            data = [g.to_dict() for g in GPUS.values()]
            rows = [(d["name"], d["label"], d["mem_gb"], d["hbm_tbps"], d["bf16_dense_tflops"],
                     d["fp8_dense_tflops"] if d["fp8_dense_tflops"] is not None else "-",
                     d["link_gbps_bidir"] if d["link_gbps_bidir"] is not None else "-",
                     d["link_kind"]) for d in data]
            text = [f"{d['name']}: {d['source']}" for d in data]
            output.emit(output.View(data, tables=[output.Table(
                "GPU presets (dense peaks: datasheets' sparse TFLOPs halved)",
                ("gpu", "label", "memory GB", "HBM TB/s", "BF16 TF", "FP8 TF", "link GB/s",
                 "link"), rows)], text=text), as_json=as_json)

        output.run(go)

    @clock_app.command("explain")
    def explain(
        case: Annotated[list[str], typer.Option(
            "--case", help="A step in `vllm bench forward` syntax NAME=[N*]Q[@K][c][:D], K the "
            "KV length after the step (e.g. decode=64*1@4097, prefill=2048); repeatable.")],
        gpu: Annotated[str | None, typer.Option("--gpu", help="GPU preset (kvcli clock gpus).")]
        = None,
        calibration: Annotated[str | None, typer.Option(
            "--calibration", help="A `kvcli calibrate --gpu` file: the calibrated clock (the "
            "file's ceilings and fitted factors) instead of a preset.")] = None,
        model: Annotated[str | None, typer.Option("--model", help="Model preset.")] = None,
        model_config: Annotated[str | None, typer.Option(
            "--model-config", help="A Hugging Face config.json instead.")] = None,
        tp: Annotated[int, typer.Option("--tp", "--tensor-parallel-size", "-tp",
                                        help="Tensor-parallel size.")] = 1,
        kv_cache_dtype: Annotated[str, typer.Option(
            "--kv-cache-dtype", metavar="|".join(KV_CACHE_DTYPES), help="vLLM's "
            "--kv-cache-dtype (auto: the model's); its other dtypes are refused, not "
            "modelled.")] = "auto",
        async_scheduling: Annotated[bool, typer.Option(
            "--async-scheduling/--no-async-scheduling", show_default=False,
            help="vLLM's flag; off, CPU time adds to the step instead of overlapping. "
            "[default: on]")] = True,
        as_json: Annotated[bool, typer.Option("--json", help="JSON on stdout.")] = False,
    ) -> None:
        """One step's time per kernel group under the roofline clock, vLLM's count beside it."""
        from kvcli import output
        from kvcore.clock.explain import explain as run_explain
        from kvcore.vllm_values import kv_cache_dtype as vllm_kv_dtype

        def go() -> None:
            data = run_explain(model=model, model_config=model_config, gpu=gpu, cases=case,
                               tp=tp, kv_cache_dtype=vllm_kv_dtype(kv_cache_dtype),
                               async_scheduling=async_scheduling,
                               calibration=calibration)
            if data["warning"]:
                output.warn(data["warning"])
            output.emit(explain_view(data), as_json=as_json)

        output.run(go)


def explain_view(data: dict):
    from kvcli.output import Table, View

    tables, text = [], []
    for c in data["cases"]:
        rows = [(x["name"], f"{x['flops'] / 1e9:,.1f}", f"{x['bytes'] / 1e6:,.1f}", x["bound"],
                 f"{x['ms']:.4f}", f"{x['factor']:g}", x["source"],
                 f"{x['vllm_flops'] / 1e9:,.1f}", f"{x['vllm_bytes'] / 1e6:,.1f}")
                for x in c["components"]]
        rows.append(("total (GPU)", f"{c['flops'] / 1e9:,.1f}", f"{c['bytes'] / 1e6:,.1f}", "",
                     f"{c['gpu_ms']:.4f}", "", "", f"{c['vllm_flops'] / 1e9:,.1f}",
                     f"{(c['vllm_read_bytes'] + c['vllm_write_bytes']) / 1e6:,.1f}"))
        tables.append(Table(
            f"{c['case']} ({c['spec']}): {c['requests']} request(s), {c['tokens']} token(s) on "
            f"{data['gpu']} at tp {data['tp']}: step {c['step_ms']:.3f} ms",
            ("group", "GFLOP", "MB", "bound", "ms", "factor", "source", "vLLM GFLOP", "vLLM MB"),
            rows, caption="; ".join(c["differences"])))
    cpu = f"CPU terms {data['cpu_step_us']:g} us a step, {data['cpu_request_us']:g} us a request"
    if data.get("calibration"):
        text.append(f"{data['model']} on {data['gpu']}: calibrated clock, ceilings and factors "
                    f"fitted by kvcli calibrate ({data['calibration']}); {cpu} (the file's)")
    else:
        text.append(f"{data['model']} on {data['gpu']}: roofline clock, factors: defaults from "
                    f"peers' measurements (docs/clock.md), not calibrated; {cpu}")
    return View(data, tables=tables, text=text)
