"""`kvcli calibrate --gpu`: measure on this device, fit the roofline, build the calibration
document (schema `kvcore.clock.calibration.SCHEMA`).

``device="cuda"`` is the real run (exit 3 without CUDA, as `kvcli bench --gpu`);
``device="cpu"`` runs the same code on CPU tensors with the Triton kernel under its interpreter
(``TRITON_INTERPRET=1``), for the tests: the file it writes is valid, its numbers describe a CPU.
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import platform
import sys
from collections.abc import Callable
from typing import Any

from kvcore.errors import InputError, NoDeviceError

# name -> (GEMM M values, decode (batch, ctx), prefill (chunk, ctx), elementwise tokens,
# ceiling GEMM size). The full grid is sized for about two minutes on an H100/H200 (reference
# 7.3; not yet timed on one).
_M = [1 << i for i in range(14)]
GRIDS: dict[str, tuple[list[int], list[tuple[int, int]], list[tuple[int, int]], list[int], int]] = {
    "full": (_M,
             [(b, c) for b in (1, 4, 16, 64, 256) for c in (128, 512, 2048, 8192, 32768)
              if b * c <= 1 << 20],
             [(c, x) for c in (256, 1024, 4096, 8192) for x in (0, 2048, 8192, 32768)],
             [1 << i for i in range(0, 15, 2)], 8192),
    "tiny": ([1, 4, 16, 64], [(1, 16), (2, 40), (3, 64)], [(8, 0), (16, 0), (8, 24)],
             [1, 16, 64], 128),
}


DEVICES = ("cuda", "cpu")


def check_device_name(name: str) -> None:
    """``--device``'s value, before anything is imported or read: cuda or cpu, else
    `InputError` (exit 2) on any machine, torch or not (`kvcli bench --gpu --device bogus`
    said "no CUDA device", exit 3). ``cuda:N`` is refused: the benchmarks time the current
    device; CUDA_VISIBLE_DEVICES picks it."""
    if name in DEVICES:
        return
    hint = (f" (pick GPU {name[5:]} with CUDA_VISIBLE_DEVICES={name[5:]} and --device cuda)"
            if name.startswith("cuda:") and name[5:].isdigit() else "")
    raise InputError(f"must be cuda or cpu, got {name!r}{hint}", field="device")


def device_for(name: str, command: str = "kvcli calibrate --gpu") -> Any:
    """The torch device to measure on; `NoDeviceError` (exit 3) without torch or CUDA, after
    the name's check (`check_device_name`, exit 2). ``command`` names the command in the
    messages."""
    check_device_name(name)
    try:
        import torch
    except ImportError:
        raise NoDeviceError("torch is not installed (pip install 'kvcli[kernels]'); "
                            f"`{command}` needs torch with CUDA") from None
    # (a CPU build of torch comes without Triton; found, not imported: Triton must not load
    # before TRITON_INTERPRET is set below)
    if importlib.util.find_spec("triton") is None:
        raise NoDeviceError("Triton is not installed (pip install 'kvcli[kernels]'); "
                            f"`{command}` runs the Triton paged-decode kernel")
    if name == "cpu":
        if os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
            # Triton reads it when a kernel is defined: the kernels' module is imported on first
            # use, so setting it here is in time unless Triton's kernels were defined already.
            if any(m in sys.modules for m in ("kernels.triton_decode", "kernels.merge",
                                               "kernels.stream")):
                raise InputError("cpu runs the Triton kernel under its interpreter: set "
                                 "TRITON_INTERPRET=1", field="device")
            os.environ["TRITON_INTERPRET"] = "1"
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise NoDeviceError(f"no CUDA device: `{command}` needs an NVIDIA GPU "
                            "(torch.cuda.is_available() is false)")
    return torch.device("cuda")


def gpu_info(device: Any) -> dict[str, Any]:
    import torch
    import triton

    info: dict[str, Any] = {"torch": torch.__version__, "triton": triton.__version__}
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        info.update(name=p.name, mem_gb=round(p.total_memory / 1e9, 3),
                    cc=f"{p.major}.{p.minor}", sms=p.multi_processor_count,
                    cuda=torch.version.cuda)
    else:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        info.update(name=f"cpu ({platform.machine()}, Triton interpreter)",
                    mem_gb=round(mem / 1e9, 3), cc=None, sms=0)
    return {"name": info.pop("name"), "mem_gb": info.pop("mem_gb"), **info}


def calibrate(g: Any, *, device_name: str, grid: str, tp: int, block_size: int,
              log: Callable[[str], None]) -> dict:
    """Measure, fit and return the calibration document for model geometry ``g``."""
    from kvcli.app import version_line
    from kvcore.clock.calibration import SCHEMA, check_calibration, scope_geometry
    from kvcore.clock.calibration_fit import fastest_gemm_tflops, fit_tables
    from kvcore.clock.factors import DEFAULT_FACTORS

    if g.quantization or g.num_experts or g.count("mamba") or not g.intermediate_size:
        raise InputError(f"{g.name}: calibration measures dense, unquantised attention models "
                         "(no MoE, Mamba or quantised weights yet)", field="model")
    if g.num_attention_heads % tp:
        raise InputError(f"{g.name}'s {g.num_attention_heads} attention heads do not divide "
                         f"into {tp} tensor-parallel ranks", field="tp")
    if grid not in GRIDS:
        raise InputError(f"must be one of {', '.join(GRIDS)}, got {grid!r}", field="grid")
    if grid == "tiny" and device_name != "cpu":
        # its few points bind no compute-bound attention: eta_attn stayed the fit's lower bound
        # (600x small), and the clock's prefills came out 16-33x too slow, at 0 % fit error
        raise InputError("the tiny grid is the CPU tests' (--device cpu): its points leave "
                         "factors undetermined; calibrate a GPU with --grid full", field="grid")
    device = device_for(device_name)
    import torch

    from kvcli.calibration import micro

    ms, dec, pre, toks, size = GRIDS[grid]
    dtype = micro.DTYPES.get(g.dtype)
    if dtype is None:
        raise InputError(f"{g.name}: dtype {g.dtype} is not measured", field="model")
    torch.manual_seed(0)
    heads = (max(1, g.num_attention_heads // tp), max(1, g.num_kv_heads // tp), g.head_dim)
    gpu = gpu_info(device)
    log(f"calibrating {g.name} (tp {tp}) on {gpu['name']}, grid {grid}")
    ceil = micro.ceilings(device, dtype, size)
    log(f"ceilings: copy {ceil['copy_tbps']:.4g} TB/s, GEMM {ceil['gemm_bf16_tflops']:.4g} TF")
    tables = {
        "gemm": micro.gemm_table(micro.gemm_shapes(g, tp), ms, device, dtype, log),
        "decode_attention": micro.decode_table(heads, g.dtype, dec, block_size, device, log),
        "decode_attention_skew": [],
        "prefill_attention": micro.prefill_table(heads, pre, device, dtype, log),
        "elementwise": micro.elementwise_table(g.hidden_size, g.intermediate_size // tp, toks,
                                               device, dtype, log),
        "allreduce": [],
    }
    ceilings = {k: ceil[k] for k in ("copy_tbps", "gemm_bf16_tflops", "gemm_fp8_tflops")}
    fastest = fastest_gemm_tflops(tables["gemm"])
    if fastest > ceilings["gemm_bf16_tflops"]:
        log(f"GEMM ceiling raised to {fastest:.1f} TF: a model GEMM ran faster than the "
            f"{size}^3 probe")
        ceilings["gemm_bf16_tflops"] = fastest
    factors, fit = fit_tables(g, tables, ceilings, tp=tp)
    factors.update(c_step_us=DEFAULT_FACTORS.cpu_step_us, c_req_us=DEFAULT_FACTORS.cpu_request_us,
                   cpu_terms="default")
    doc = {
        "schema": SCHEMA,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "tool": f"calibrate: {version_line()}",
        "gpu": gpu,
        "scope": {"model": g.name, "dtype": g.dtype, "kv_dtype": g.dtype, "tp": tp,
                  "block_size": block_size, "geometry": scope_geometry(g)},
        "ceilings": ceilings, "ceilings_detail": {"copy": ceil["copy"],
                                                  "gemm_size": ceil["gemm_size"],
                                                  "gemm_probe_tflops": ceil["gemm_bf16_tflops"]},
        "grid": grid, "tables": tables, "factors": factors, "fit": fit,
        "provenance": {
            "tables": f"measured on {gpu['name']} ({device.type})",
            "timing": ("CUDA graphs + events, medians, inputs rotated past L2"
                       if device.type == "cuda" else "wall clock on CPU: a smoke run"),
            "decode_attention": "kernels.paged_decode on kvcore KVCacheManager block tables",
            "prefill_attention": "torch SDPA, causal, contiguous KV (a proxy for vLLM's paged "
                                 "varlen prefill)",
            "elementwise": "measured and fitted; the clock's kernel groups carry no separate "
                           "elementwise term (vLLM's count folds SiLU x mul into the MLP), so "
                           "the calibrated clock does not use it",
            "cpu_terms": "default (BLIS beta6/beta7 magnitudes): micro-benchmarks cannot "
                         "measure them",
            "not_measured": "decode_attention_skew, allreduce (one GPU)",
        },
    }
    check_calibration(doc, "<calibration>")     # never write a file `--calibration` refuses
    return doc
