"""The micro-benchmarks of `kvcli calibrate --gpu` (reference clock.md 7.3), on one device.

The same code runs on a CUDA device (CUDA events and graphs, `kernels.timing.time_launches`) and
on CPU tensors under Triton's interpreter (the tests: tiny shapes, wall-clock times that mean
nothing). Inputs rotate over copies larger than L2 on a GPU, so that a weight or a KV cache is
read from HBM as in a real step, where the other layers evict it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from kernels.cases import CaseSpec, build
from kernels.timing import ROTATE_BYTES, copy_bandwidth, time_launches

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
SHORT_DTYPE = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def _copies(nbytes: int, device: torch.device) -> int:
    return 1 if device.type != "cuda" else max(1, min(8, math.ceil(ROTATE_BYTES / max(1, nbytes))))


def _us(fns: list[Callable[[], object]]) -> float:
    t, _ = time_launches(fns)
    return t * 1e6


def ceilings(device: torch.device, dtype: torch.dtype, size: int) -> dict[str, Any]:
    """Copy bandwidth (read + written bytes / s) and the dense GEMM peak of a size^3 GEMM."""
    bw = copy_bandwidth(device)
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    us = _us([partial(torch.matmul, a, b)])
    fp8 = None
    if device.type == "cuda" and torch.cuda.get_device_capability(device) >= (8, 9):
        fp8 = _fp8_tflops(a, b)
    return {"copy_tbps": bw["best"] / 1e12, "gemm_bf16_tflops": 2 * size ** 3 / us / 1e6,
            "gemm_fp8_tflops": fp8, "copy": {k: v for k, v in bw.items() if k != "bytes"},
            "gemm_size": size}


def _fp8_tflops(a: torch.Tensor, b: torch.Tensor) -> float | None:
    try:
        a8 = a.to(torch.float8_e4m3fn)
        b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()     # column-major, as cuBLASLt wants
        one = torch.ones((), device=a.device)
        us = _us([partial(torch._scaled_mm, a8, b8, scale_a=one, scale_b=one,
                          out_dtype=torch.bfloat16)])
    except Exception:  # noqa: BLE001 - no FP8 GEMM in this torch/GPU: the ceiling stays unknown
        return None
    return 2 * a.shape[0] ** 3 / us / 1e6


def gemm_shapes(g: Any, tp: int) -> list[tuple[str, int, int]]:
    """(op, N, K) of the model's GEMMs on one GPU: what `kvcore.clock.work` bills."""
    d, q, kv = g.head_dim, max(1, g.num_attention_heads // tp), max(1, g.num_kv_heads // tp)
    D, di = g.hidden_size, g.intermediate_size // tp
    return [("qkv", (q + 2 * kv) * d, D), ("o", D, q * d), ("gate_up", 2 * di, D),
            ("down", D, di), ("lm_head", g.vocab_size // tp, D)]


def gemm_table(shapes: list[tuple[str, int, int]], ms: list[int], device: torch.device,
               dtype: torch.dtype, log: Callable[[str], None]) -> list[dict]:
    rows = []
    for op, n, k in shapes:
        w_bytes = n * k * dtype.itemsize
        ws = [torch.randn(k, n, device=device, dtype=dtype) for _ in range(_copies(w_bytes, device))]
        for m in ms:
            x = torch.randn(m, k, device=device, dtype=dtype)
            us = _us([partial(torch.matmul, x, w) for w in ws])
            rows.append({"op": op, "m": m, "n": n, "k": k, "us": us})
        log(f"gemm {op} ({n} x {k}): {len(ms)} sizes")
        del ws
    return rows


def decode_table(heads: tuple[int, int, int], dtype: str, grid: list[tuple[int, int]],
                 block_size: int, device: torch.device, log: Callable[[str], None]) -> list[dict]:
    """The project's Triton paged decode over batch x context, on block tables kvcore makes
    (a churned `KVCacheManager`, `kvcli.gpu_bench.scripted_tables`)."""
    from kernels import paged_decode
    from kvcli.gpu_bench import scripted_tables

    hq, hkv, d = heads
    rows = []
    for i, (batch, ctx) in enumerate(grid):
        tab = scripted_tables([ctx] * batch, block_size=block_size, seed=i,
                              decode_steps=min(8, ctx - 1))
        b = build(CaseSpec(f"{batch}x{ctx}", hq, hkv, d, SHORT_DTYPE[dtype]), tab, block_size, device)

        def one(j: int, b=b) -> object:
            kv = b.kv[j]
            return paged_decode(b.q[j], kv[:, 0], kv[:, 1], b.block_tables, b.seq_lens,
                                out=b.out[j])

        us = _us([partial(one, j) for j in range(len(b.kv))])
        kv_bytes = batch * ctx * 2 * hkv * d * DTYPES[dtype].itemsize
        rows.append({"batch": batch, "ctx": ctx, "kv_bytes": kv_bytes, "us": us})
        del b
    log(f"decode attention (Triton, paged): {len(grid)} cases")
    return rows


def prefill_table(heads: tuple[int, int, int], grid: list[tuple[int, int]],
                  device: torch.device, dtype: torch.dtype, log: Callable[[str], None]
                  ) -> list[dict]:
    """Causal SDPA of a chunk after ``ctx`` computed tokens (contiguous KV: a proxy for vLLM's
    paged varlen prefill; the chunk's queries aligned to the end of the keys)."""
    hq, _, d = heads
    rows = []
    for chunk, ctx in grid:
        q = torch.randn(1, hq, chunk, d, device=device, dtype=dtype)
        k = torch.randn(1, hq, ctx + chunk, d, device=device, dtype=dtype)
        v = torch.randn_like(k)
        us = _us([partial(causal_sdpa, q, k, v, ctx)])
        rows.append({"chunk": chunk, "ctx": ctx, "us": us})
    log(f"prefill attention (SDPA, causal): {len(grid)} cases")
    return rows


def causal_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, ctx: int) -> torch.Tensor:
    sdpa = torch.nn.functional.scaled_dot_product_attention
    if ctx == 0:
        return sdpa(q, k, v, is_causal=True)
    from torch.nn.attention.bias import causal_lower_right

    return sdpa(q, k, v, attn_mask=causal_lower_right(q.shape[-2], k.shape[-2]))


def _silu_mul(gu: torch.Tensor, inter: int) -> torch.Tensor:
    return torch.nn.functional.silu(gu[:, :inter]) * gu[:, inter:]


def elementwise_table(hidden: int, inter: int, tokens: list[int], device: torch.device,
                      dtype: torch.dtype, log: Callable[[str], None]) -> list[dict]:
    """RMSNorm, SiLU x mul and the residual add over the token grid; ideal bytes (each input
    read once, each output written once)."""
    a = dtype.itemsize
    rows = []
    for t in tokens:
        x = torch.randn(t, hidden, device=device, dtype=dtype)
        r = torch.randn_like(x)
        w = torch.ones(hidden, device=device, dtype=dtype)
        gu = torch.randn(t, 2 * inter, device=device, dtype=dtype)
        cases: dict[str, tuple[Callable[[], object], int]] = {
            "rms_norm": (partial(torch.nn.functional.rms_norm, x, (hidden,), w, 1e-5),
                         2 * t * hidden * a),
            "silu_mul": (partial(_silu_mul, gu, inter), 3 * t * inter * a),
            "residual_add": (partial(torch.add, x, r), 3 * t * hidden * a),
        }
        for op, (fn, nbytes) in cases.items():
            rows.append({"op": op, "tokens": t, "bytes": nbytes, "us": _us([fn])})
    log(f"elementwise: {len(tokens)} sizes")
    return rows
