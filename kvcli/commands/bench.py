"""`kvcli bench`: how fast kvcore's KV cache manager replays a workload (CPU), or `--gpu`
(`kvcli.gpu_bench`: the decode kernel over the shipped tables, or with ``--trace`` over a
replay's own steps, `kvcli.gpu_steps`).

Without ``--ops`` it generates the benchmark workload (`kvcore.engine.bench_workload`, the recipe of the
oracle's bench-2000 file). Only the manager calls are timed for the headline rate (lookup,
allocate, decode append + allocate, free); request creation with prompt hashing is timed apart.
The run's totals (prefix-cache queries and hits, allocated blocks, free blocks and cached hashes
at the end) are printed beside the speed so a wrong fast run shows.

JSON keys (``--json``): requests, decodes, frees, seconds_manager, seconds_total,
seconds_create, seconds_lookup, seconds_allocate, seconds_decode, seconds_free,
requests_per_second_manager, requests_per_second_total, allocated_blocks_per_second,
queries, hits, hit_rate, hit_blocks, allocated_blocks, free_blocks, cached_hashes, rejected,
workload.
"""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command("bench")
    def bench(
        ops: Annotated[str | None, typer.Option(
            "--ops", help="Op script to replay. [default: the generated benchmark workload]",
            show_default=False)]
        = None,
        n: Annotated[int | None, typer.Option(
            "--n", min=1, help="Requests in the generated workload [default: 2000].",
            show_default=False)] = None,
        seed: Annotated[int | None, typer.Option(
            "--seed", help="Seed of the generated workload [default: 1234].",
            show_default=False)] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
        = False,
        gpu: Annotated[bool, typer.Option("--gpu", help="Run the GPU paged-attention benchmark "
                                          "instead (needs CUDA and torch).")] = False,
        trace: Annotated[str | None, typer.Option(
            "--trace", help="(--gpu) replay this trace and time the decode of a sample of its "
            "engine steps on their own block tables.")] = None,
        model: Annotated[str | None, typer.Option(
            "--model", help="(--gpu) model preset: head layout (and, with --trace, the "
            "replay's KV cache groups).")] = None,
        cases: Annotated[str | None, typer.Option(
            "--cases", help="(--gpu) the shipped block tables' cases to run, comma-separated "
            "(64x4k, 1x32k, ...: an unknown name's error lists them) [default: all].",
            show_default=False)] = None,
        sample_steps: Annotated[int | None, typer.Option(
            "--sample-steps", min=1, help="(--gpu --trace) decode steps to time, spread evenly; "
            "at most 32 with --device cpu [default: 32].")] = None,
        device: Annotated[str | None, typer.Option(
            "--device", help="(--gpu --trace) cuda, or cpu: the same code on CPU tensors under "
            "TRITON_INTERPRET=1 (tests; the times describe the CPU) [default: cuda].")] = None,
    ) -> None:
        """Time kvcore's KV cache manager on a workload (CPU), or the decode kernels (--gpu)."""
        from kvcli import output

        def go() -> int:
            from kvcore.errors import InputError, nonempty_name

            if ops == "":
                # (it said "error: : no such file", naming neither the option nor a file)
                raise InputError("an empty path", field="ops")
            if gpu:
                # ('' was "none given": the shipped tables, every case or the default heads
                # were timed instead, unsaid)
                for name, value in (("trace", trace), ("model", model), ("cases", cases)):
                    nonempty_name(value, name)
                if device is not None:
                    # (before the GPU code's import: a bad value was exit 3, "no CUDA device")
                    from kvcli.calibration.run import check_device_name

                    check_device_name(device)
                    if device == "cpu" and not trace:
                        # (it warned "no effect without --trace", then timed the tables on
                        # CUDA: the device asked for was not the one run)
                        raise InputError("cpu runs only the replay-driven decode (give "
                                         "--trace); the shipped tables are timed on CUDA",
                                         field="device")
                try:
                    from kvcli.gpu_bench import run_gpu_bench  # lazy: torch is heavy
                except ModuleNotFoundError as err:
                    if err.name != "kvcli.gpu_bench":
                        raise
                    from kvcore.errors import NoDeviceError

                    raise NoDeviceError("the GPU benchmark (kvcli.gpu_bench) is not "
                                        "installed in this build") from None

                if trace and cases:
                    output.warn("option --cases: no effect with --trace (the replay's steps "
                                "are the cases)")
                unused = [f"--{k}" for k, v in (("sample-steps", sample_steps),
                                                ("device", device)) if v is not None]
                if unused and not trace:    # (--device cuda only: cpu is refused above)
                    output.warn(f"option(s) {', '.join(unused)}: no effect without --trace")
                cpu_only = [f"--{k}" for k, v in (("ops", ops), ("n", n), ("seed", seed))
                            if v is not None]
                if cpu_only:
                    output.warn(f"option(s) {', '.join(cpu_only)}: no effect with --gpu (they "
                                "shape the CPU benchmark's workload)")
                view = run_gpu_bench(trace=trace, model=model, cases=cases,
                                     sample_steps=sample_steps or 32, device=device or "cuda")
                output.emit(view, as_json=as_json)
                from kvcli.gpu_bench import failures

                failed = failures(view.data)
                if failed:
                    # (the results are out; the failures were only in the JSON, exit 0)
                    output.message(f"error: {failed}")
                    return 1
                return 0
            else:
                unused = [f"--{k}" for k, v in (("trace", trace), ("model", model),
                                                ("cases", cases), ("sample-steps", sample_steps),
                                                ("device", device)) if v is not None]
                if unused:
                    output.warn(f"option(s) {', '.join(unused)}: no effect without --gpu (the "
                                "CPU benchmark replays the bench workload or --ops)")
                generated = [f"--{k}" for k, v in (("n", n), ("seed", seed)) if v is not None]
                if ops is not None and generated:
                    output.warn(f"option(s) {', '.join(generated)}: no effect with --ops (they "
                                "shape the generated workload)")
                view = cpu_bench_view(ops, 2000 if n is None else n, 1234 if seed is None
                                      else seed)
            output.emit(view, as_json=as_json)
            return 0

        code = output.run(go)
        if code:
            raise typer.Exit(code)


def cpu_bench_view(ops_path: str | None, n: int, seed: int):
    from kvcli.output import Table, View
    from kvcore.engine.bench_workload import BENCH_CONFIG, bench_ops, check_workload_fits, run_bench
    from kvcore.engine.op_script import load_script, parse_config

    if ops_path is None:
        check_workload_fits(n)
        cfg = parse_config(BENCH_CONFIG, "<generated>", 1)
        ops = bench_ops(n, seed=seed)
        workload = f"generated: {n} requests, seed {seed}"
    else:
        cfg, op_list = load_script(ops_path)
        ops = [o.data for o in op_list]
        workload = ops_path
    r = run_bench(cfg, ops)
    if not r.requests:
        # (its rates were 0/0 shown as measured: 0 requests/s, a hit rate of 0.0)
        from kvcore.errors import InputError

        raise InputError("no request to time: the script allocates none", path=ops_path)
    mgr_s, tot_s = r.seconds_manager, r.seconds_total
    data = {
        "workload": workload, "requests": r.requests, "decodes": r.decodes, "frees": r.frees,
        "seconds_manager": mgr_s, "seconds_total": tot_s, "seconds_create": r.seconds_create,
        "seconds_lookup": r.seconds_lookup, "seconds_allocate": r.seconds_allocate,
        "seconds_decode": r.seconds_decode, "seconds_free": r.seconds_free,
        "requests_per_second_manager": r.requests / mgr_s if mgr_s else 0.0,
        "requests_per_second_total": r.requests / tot_s if tot_s else 0.0,
        "allocated_blocks_per_second": r.allocated_blocks / mgr_s if mgr_s else 0.0,
        "queries": r.queries, "hits": r.hits,
        "hit_rate": r.hits / r.queries if r.queries else 0.0, "hit_blocks": r.hit_blocks,
        "allocated_blocks": r.allocated_blocks, "free_blocks": r.free_blocks,
        "cached_hashes": r.cached_hashes, "rejected": r.rejected,
    }
    speed = Table(f"kvcore KV cache manager: {workload}", ("timed", "seconds", "requests/s",
                                                             "allocated blocks/s"),
                  [("manager calls", mgr_s, data["requests_per_second_manager"],
                    data["allocated_blocks_per_second"]),
                   ("+ request creation and hashing", tot_s, data["requests_per_second_total"],
                    r.allocated_blocks / tot_s if tot_s else 0.0)],
                  caption="manager calls = lookup + allocate + decode (append + allocate) + free")
    totals = Table("totals", ("requests", "prefix queries (tokens)", "hits (tokens)",
                              "allocated blocks", "free blocks at end", "cached hashes"),
                   [(r.requests, r.queries, r.hits, r.allocated_blocks, r.free_blocks,
                     r.cached_hashes)])
    return View(data, tables=[speed, totals])
