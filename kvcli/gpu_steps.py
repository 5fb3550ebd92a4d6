"""`kvcli bench --gpu --trace T`: the decode kernel timed on the batches a replay really runs.

The trace is replayed (engine mode, `--model`'s KV cache groups if given) and a sample of its
decode steps is captured (`kvcore.engine.decode_capture`: the decoding requests' exact lengths
and block tables, right after `schedule()`; the steps spread evenly over those that run a
decode). Then, on the GPU, for each captured step, each KV cache group the kernel serves (full
attention; sliding window, with its window) and each cache dtype (bf16, fp8): one layer's kernel
over the step's tables in a pool of the replay's size, where the replay put the blocks, timed
under both split strategies (`kernels.splits`: ``new`` and ``old``). Prefill chunks in the same
batch are not timed; chunked-local and Mamba groups are listed as not timed.

JSON (stable keys): ``kind`` ("kvcli-gpu-steps"), ``version`` (1), ``device``, ``sms``,
``torch``, ``triton``, ``trace``, ``model``, ``heads`` {``num_q_heads``, ``num_kv_heads``,
``head_dim``}, ``dtype`` (q's), ``kv_dtypes``, ``block_size``, ``num_blocks``, ``groups`` [{``kind``,
``block_size``, ``sliding_window``, ``num_layers``, ``timed``}], ``total_steps``, ``decode_steps``,
``sample_steps``, ``sample_rule``, ``copy_bytes_per_s``, ``bandwidth``, ``errors`` {kv dtype: the
error that stopped its timings}, ``steps`` [{``step``,
``ordinal``, ``batch``, ``kv_tokens`` (sum of lengths), ``max_len``, ``scheduled_tokens``,
``kernels`` [{``group``, ``kv_dtype``, ``window``, ``tokens_read``, ``bytes``, ``new`` and ``old``
{``num_splits``, ``time_us``, ``gbps``, ``pct_copy``, ``copies``, ``cycled_bytes`` (the distinct
KV bytes the timed copies rotate over: a shared prefix block once), ``warm_l2`` (under twice
the L2 cache: the time may be L2's),
``timing``}}], ``layers_us``
{kv dtype: the step's decode attention over every layer, new strategy: sum of a group's layers x
its kernel's time}}], ``summary`` {kv dtype: {strategy: {``kernels``, ``bytes``, ``time_us``,
``pct_copy`` (all bytes / all time), ``pct_copy_median``, ``pct_copy_min`` (over the kernels not
``warm_l2``, unless all are), ``warm_l2_kernels``}}}.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from kvcli.gpu_steps_cpu import MAX_CPU_SAMPLE_STEPS, check_host_pool, cpu_estimate
from kvcli.output import Table, View

TIMED_KINDS = ("full_attention", "sliding_window")
KV_DTYPES = ("bf16", "fp8")
SAMPLE_RULE = ("decode steps = steps whose batch decodes >= 1 request; captured: positions "
               "(2i+1)*D//(2N), i < N, among the D decode steps (all when N >= D)")
DEFAULT_HEADS = (32, 8, 128, "bf16")     # Llama-3.1-8B


def heads_of(model: str | None) -> tuple[int, int, int, str]:
    """(query heads, KV heads, head dim, q dtype) of ``model``'s attention (default Llama-3.1-8B)."""
    if not model:
        return DEFAULT_HEADS
    from kvcore.models.presets import load_preset

    g = load_preset(model, others=False)
    if g.mla is not None:
        from kvcore.errors import InputError

        # the paged decode kernel reads K and V heads; an MLA model's decode reads a latent
        raise InputError(f"{model} uses multi-head latent attention: the paged decode kernel "
                         "benchmarked here is the K/V-head one, not MLA's", field="model")
    dtype = {"float16": "fp16", "float32": "fp32"}.get(g.dtype, "bf16")
    return g.num_attention_heads, g.num_kv_heads, g.head_dim, dtype


def run_gpu_steps(trace: str, *, model: str | None, sample_steps: int, device_name: str,
                  log: Callable[[str], None]) -> dict:
    """Capture, then time (see the module docstring); the JSON document. Bad input is an
    `InputError` on any machine; then no CUDA (and not ``device_name == "cpu"`` under the
    interpreter) is `NoDeviceError`, before any replay."""
    from kvcli.calibration.run import device_for
    from kvcore.engine.decode_capture import capture_decode_steps, check_sample
    from kvcore.traces import read_trace

    # bad input first (exit 2, GPU or not): the model, the count, the trace (read once here)
    hq, hkv, d, q_dtype = heads_of(model)
    check_sample(sample_steps)
    if device_name == "cpu" and sample_steps > MAX_CPU_SAMPLE_STEPS:
        from kvcore.errors import InputError

        raise InputError(f"--device cpu times at most {MAX_CPU_SAMPLE_STEPS} steps, got "
                         f"{sample_steps:,} (each kernel takes seconds under Triton's "
                         "interpreter; time more on a GPU, --device cuda)", field="sample_steps")
    parsed = read_trace(trace)
    device = device_for(device_name, "kvcli bench --gpu")
    import torch
    import triton

    from kernels.timing import copy_bandwidth
    from kvcore.engine.options import ReplayOptions
    from kvcore.errors import path_label

    # The decode batches `vllm serve` would run on this GPU: its batch defaults follow the
    # device (`serve_defaults`; up to 1,024 sequences on an H200, not SchedulerConfig's 128).
    # (the replay's own warnings, e.g. its uncalibrated clock, are `kvcli replay`'s business)
    options = ReplayOptions(model=model)
    props = torch.cuda.get_device_properties(device) if device.type == "cuda" else None
    if props is not None:
        from kvcore.engine.serve_defaults import device_batch_defaults

        budget, seqs = device_batch_defaults(props.total_memory, props.name,
                                             (props.major, props.minor))
        options = ReplayOptions(model=model, max_num_batched_tokens=budget, max_num_seqs=seqs)
    cap = capture_decode_steps(trace, options, sample_steps, trace=parsed)
    timed = [i for i, g in enumerate(cap.groups) if g.kind in TIMED_KINDS]
    block_size = cap.groups[timed[0]].block_size if timed else 16
    timed = [i for i in timed if cap.groups[i].block_size == block_size]   # one pool
    if device.type == "cpu":
        check_host_pool(parsed, cap.num_blocks, block_size, hkv, d, q_dtype)
    log(f"captured {len(cap.steps)} of {cap.decode_steps} decode steps "
        f"({cap.total_steps} steps)")
    if device.type == "cpu":
        log(cpu_estimate(cap, timed, hkv, len(KV_DTYPES)))
    bw = copy_bandwidth(device)
    copy = bw["best"]
    if props is not None:
        name, sms = props.name, props.multi_processor_count
    else:
        name, sms = "cpu (interpreter; times mean nothing)", 0
    doc: dict[str, Any] = {
        "kind": "kvcli-gpu-steps", "version": 1, "device": name, "sms": sms,
        "torch": torch.__version__, "triton": triton.__version__, "trace": path_label(trace),
        "model": model, "heads": {"num_q_heads": hq, "num_kv_heads": hkv, "head_dim": d},
        "dtype": q_dtype, "kv_dtypes": list(KV_DTYPES), "block_size": block_size,
        "num_blocks": cap.num_blocks,
        "batch_defaults": {"max_num_batched_tokens": options.max_num_batched_tokens,
                           "max_num_seqs": options.max_num_seqs,
                           "from": "vllm serve on this device" if props is not None
                           else "SchedulerConfig"},
        "groups": [{"kind": g.kind, "block_size": g.block_size,
                    "sliding_window": g.sliding_window, "num_layers": g.num_layers,
                    "timed": i in timed} for i, g in enumerate(cap.groups)],
        "total_steps": cap.total_steps, "decode_steps": cap.decode_steps,
        "sample_steps": sample_steps, "sample_rule": SAMPLE_RULE,
        "copy_bytes_per_s": copy, "bandwidth": bw,
        "steps": [{"step": s.step, "ordinal": s.ordinal, "batch": len(s.seq_lens),
                   "kv_tokens": sum(s.seq_lens), "max_len": max(s.seq_lens),
                   "scheduled_tokens": s.num_scheduled_tokens, "kernels": [],
                   "layers_us": {}} for s in cap.steps]}
    doc["errors"] = {}
    for kv in KV_DTYPES:
        try:
            _time_dtype(doc, cap, timed, kv, device, (hq, hkv, d, q_dtype), block_size)
        except Exception as err:  # noqa: BLE001 - one dtype's failure must not hide the other
            msg = str(err).strip().splitlines()[-1][:300] if str(err).strip() else repr(err)
            doc["errors"][kv] = msg
            for rec in doc["steps"]:
                rec["kernels"] = [k for k in rec["kernels"] if k["kv_dtype"] != kv]
                rec["layers_us"].pop(kv, None)
            log(f"{kv}: error: {msg}")
            continue
        log(f"{kv}: timed {len(cap.steps)} steps x {len(timed)} group(s)")
    doc["summary"] = summarize(doc)
    return doc


def _time_dtype(doc: dict, cap: Any, timed: list[int], kv: str, device: Any,
                heads: tuple[int, int, int, str], block_size: int) -> None:
    """Time every captured step's kernels with a ``kv`` cache into ``doc["steps"]``."""
    from kernels.checks import DTYPES, FP8_SCALES
    from kernels.checks import KV_DTYPES as FP8
    from kernels.splits import STRATEGIES
    from kernels.steps import make_pool, time_step

    hq, hkv, d, q_dtype = heads
    copy = doc["copy_bytes_per_s"]
    kv_dtype = FP8[kv] if kv == "fp8" else DTYPES[q_dtype]
    scales = FP8_SCALES if kv == "fp8" else (1.0, 1.0)
    from kernels.cases import keys_read

    least = min((keys_read(st.seq_lens, cap.groups[g].sliding_window) for st in cap.steps
                 for g in timed), default=0) * 2 * hkv * d * kv_dtype.itemsize
    pool = make_pool(cap.num_blocks, block_size, hkv, d, kv_dtype, device, scale=scales[0],
                     least_read=least)
    for s, rec in zip(cap.steps, doc["steps"]):
        for g in timed:
            info = cap.groups[g]
            k: dict[str, Any] = {"group": g, "kv_dtype": kv, "window": info.sliding_window}
            for name, strategy in STRATEGIES.items():
                r = time_step(pool, s.block_tables[g], s.seq_lens, num_q_heads=hq,
                              q_dtype=DTYPES[q_dtype], window=info.sliding_window,
                              scales=scales, strategy=strategy)
                k.update(tokens_read=r.pop("tokens_read"), bytes=r.pop("bytes"))
                r["pct_copy"] = 100 * r["gbps"] * 1e9 / copy
                k[name] = r
            rec["kernels"].append(k)
        rec["layers_us"][kv] = sum(cap.groups[k["group"]].num_layers * k["new"]["time_us"]
                                   for k in rec["kernels"] if k["kv_dtype"] == kv)


def summarize(doc: dict) -> dict:
    out: dict[str, dict] = {}
    for kv in doc["kv_dtypes"]:
        ks = [k for s in doc["steps"] for k in s["kernels"] if k["kv_dtype"] == kv]
        out[kv] = {}
        for strategy in ("new", "old"):
            if not ks:
                continue
            # kernels that may have read from L2 (their copies cycle under twice its size)
            # are counted apart, not in the percentages, unless every one is
            cold = [k for k in ks if not k[strategy].get("warm_l2")] or ks
            pct = [k[strategy]["pct_copy"] for k in cold]
            nbytes = sum(k["bytes"] for k in cold)
            us = sum(k[strategy]["time_us"] for k in cold)
            out[kv][strategy] = {"kernels": len(cold), "bytes": nbytes, "time_us": us,
                                 "warm_l2_kernels": sum(bool(k[strategy].get("warm_l2"))
                                                        for k in ks),
                                 "pct_copy": 100 * nbytes / (us * 1e-6) / doc["copy_bytes_per_s"],
                                 "pct_copy_median": statistics.median(pct),
                                 "pct_copy_min": min(pct)}
    return out


COLUMNS = ("step", "batch", "tokens", "group", "window", "kv", "MB", "new splits", "new us",
           "new % copy", "old splits", "old us", "old % copy")


def steps_view(doc: dict) -> View:
    rows = []
    for s in doc["steps"]:
        for k in s["kernels"]:
            new, old = k["new"], k["old"]
            rows.append((s["step"], s["batch"], s["kv_tokens"], k["group"], k["window"] or "-",
                         k["kv_dtype"], round(k["bytes"] / 1e6, 2), new["num_splits"],
                         round(new["time_us"], 1), round(new["pct_copy"], 1),
                         old["num_splits"], round(old["time_us"], 1), round(old["pct_copy"], 1)))
    summary = [(kv, strategy, v["kernels"], round(v["bytes"] / 1e6, 1), round(v["time_us"], 1),
                round(v["pct_copy"], 1), round(v["pct_copy_median"], 1), round(v["pct_copy_min"], 1))
               for kv, by in doc["summary"].items() for strategy, v in by.items()]
    bw = doc["bandwidth"]
    caption = (f"{doc['device']}; {doc['trace']}: {len(doc['steps'])} of {doc['decode_steps']} "
               f"decode steps; one layer's decode per group; copy (read + write) "
               f"{doc['copy_bytes_per_s'] / 1e9:.0f} GB/s (memcpy {bw['memcpy'] / 1e9:.0f}, "
               f"triton copy {bw['triton_copy'] / 1e9:.0f}); % copy = ideal bytes / time / copy")
    return View(doc, [
        Table("decode per captured step", COLUMNS, rows, caption),
        Table("summary", ("kv", "strategy", "kernels", "MB", "us", "% copy (all)",
                          "% copy median", "% copy min"), summary,
              "new = waves rule + fused merge, old = legacy rule + merge kernel")])
