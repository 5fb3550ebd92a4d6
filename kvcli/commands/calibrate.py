"""`kvcli calibrate --gpu --model M -o cal.json`: measure this GPU's kernels over the model's
shapes, fit the roofline's factors and write the calibration file (docs/clock.md)."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command("calibrate")
    def calibrate(
        out: Annotated[str, typer.Option("-o", "--output", help="The calibration file to write "
                                         "(JSON, written atomically).")],
        gpu: Annotated[bool, typer.Option("--gpu", help="Measure on this machine's GPU (needs "
                                          "CUDA, torch and Triton; exit 3 without).")] = False,
        model: Annotated[str | None, typer.Option("--model", help="Model preset.")] = None,
        model_config: Annotated[str | None, typer.Option(
            "--model-config", help="A Hugging Face config.json instead.")] = None,
        tp: Annotated[int, typer.Option("--tp", "--tensor-parallel-size", "-tp",
                                        help="Tensor-parallel size: the "
                                        "per-GPU shapes measured.")] = 1,
        grid: Annotated[str, typer.Option("--grid", help="full (sized for about two minutes "
                                          "on an H100/H200, not yet timed on one) or tiny (the "
                                          "CPU tests', with --device cpu only).")] = "full",
        device: Annotated[str, typer.Option("--device", help="cuda, or cpu: the same code on "
                                            "CPU tensors under TRITON_INTERPRET=1 (tests; the "
                                            "times describe the CPU).")] = "cuda",
        block_size: Annotated[int, typer.Option("--block-size",
                                                help="KV block size of the decode tables "
                                                "(at most 4,096).")] = 16,
        as_json: Annotated[bool, typer.Option("--json", help="Also print the file on "
                                              "stdout (with -o -, it is printed once).")] = False,
    ) -> None:
        """Measure the model's kernels on this GPU and fit the roofline's factors."""
        from kvcli import output

        def go() -> None:
            from kvcli.calibration_view import calibration_view
            from kvcore.clock.registry import model_geometry
            from kvcore.errors import InputError
            from kvcore.sizing.option_ranges import check_counts

            # (typer's own range check said 'Input should be greater than or equal to 1')
            check_counts(tp=tp, block_size=block_size)
            if block_size > 4096:
                raise InputError(f"must be at most 4,096, got {block_size}", field="block_size")
            if not gpu:
                raise InputError("calibration measures a GPU: give --gpu (kvcli calibrate --gpu "
                                 "--model M -o cal.json)", field="gpu")
            g = model_geometry(model, model_config)
            if g is None:
                raise InputError("a model is needed (--model or --model-config)", field="model")
            if g.mla is not None:
                # the micro-benchmarks time K/V-head kernels (the Triton paged decode, SDPA);
                # none of them is MLA's latent attention, so no factor would be MLA's
                raise InputError(f"{g.name} uses multi-head latent attention (MLA), whose "
                                 "kernels kvcli calibrate does not measure; time it with the "
                                 "roofline clock (--gpu) or --clock linear:C0,C1,C2",
                                 field="model" if model else "model_config")
            output.check_output(out, "output")
            # (-o cfg.json --model-config cfg.json wrote the calibration over the model's config)
            output.check_distinct([("the model config", model_config)], [("output", out)])
            from kvcli.calibration.run import calibrate as run_calibrate

            doc = run_calibrate(g, device_name=device, grid=grid, tp=tp, block_size=block_size,
                                log=output.message)
            with output.open_output(out, field="output") as f:
                f.write(output.dumps_pretty(doc))
            from kvcore.clock.calibration import calibration_caveat, check_calibration

            if out != "-":
                output.message(f"wrote {out}")
            caveat = calibration_caveat(check_calibration(doc, out))
            if caveat:
                output.warn(caveat)
            # with -o -, stdout holds the file: the tables go to stderr (--json: no second copy)
            output.emit(calibration_view(doc), as_json=as_json and out != "-",
                        to_stderr=out == "-")

        output.run(go)
