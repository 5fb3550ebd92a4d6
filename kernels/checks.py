"""Correctness checks shared by the CI tests (interpreter, CPU) and the device check (CUDA).

`make_inputs` builds a random paged cache whose blocks are scattered and whose unused block-table
entries point at live, random blocks (so reading past a sequence's end changes the answer);
`check` runs the Triton kernel and compares it with the torch reference (fp32) and a float64
reference. The kernel must be within the dtype's tolerance of float64 *and* not much worse than
the fp32 reference is.

An fp8 spec (``kv_dtype="fp8"``) stores the cache as vLLM does (``kernels.fp8.quantize``: value /
scale in e4m3, with the scales ``FP8_SCALES``) and checks the kernel against the float64
reference over the same stored values, at q's dtype's tolerance: e4m3 -> bf16/fp16 is exact and
the scales are fp32 multipliers, so the kernel adds no error that a bf16 cache would not. (The
format's own rounding is the cache's, measured against the unquantized values by
`kernels.fp8.output_sigma`.)
"""

from __future__ import annotations

from typing import NamedTuple

import torch

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
KV_DTYPES = {"fp8": torch.float8_e4m3fn}
# k_scale, v_scale of the fp8 checks: distinct and not powers of two, so that a scale left out,
# applied twice or swapped changes the answer; N(0, 1) data / 0.05 stays far below 448.
FP8_SCALES = (0.05, 0.02)
# Allowed |error| <= atol + rtol * |exact| per dtype: about two units in the last place of the
# output dtype (the output is rounded once, and p is rounded to the dtype before the PV product).
TOLERANCE = {"fp32": (1e-5, 1e-5), "fp16": (1e-3, 4e-3), "bf16": (8e-3, 1.6e-2)}


class Spec(NamedTuple):
    """One check: head layout, dtype, page size, lengths, window, forced split count."""

    num_q_heads: int
    num_kv_heads: int
    head_dim: int
    dtype: str
    block_size: int
    seq_lens: tuple[int, ...]
    window: int | None = None
    num_splits: int | None = 1
    strided: bool = True  # K and V as views of one [blocks, 2, page, heads, dim] tensor
    kv_dtype: str | None = None   # None: the cache in ``dtype``; "fp8": e4m3 with FP8_SCALES
    merge: str = "fused"          # how split pieces are merged (kernels.splits.MERGES)

    @property
    def name(self) -> str:
        w = f"-w{self.window}" if self.window else ""
        kv = f"-kv{self.kv_dtype}" if self.kv_dtype else ""
        m = f"-{self.merge}" if self.num_splits != 1 and self.merge != "fused" else ""
        return (f"{self.dtype}{kv}-h{self.num_q_heads}/{self.num_kv_heads}-d{self.head_dim}"
                f"-bs{self.block_size}-lens{'_'.join(map(str, self.seq_lens))}{w}"
                f"-p{self.num_splits}{m}")

    @property
    def scales(self) -> tuple[float, float]:
        """(k_scale, v_scale) of the cache."""
        return FP8_SCALES if self.kv_dtype else (1.0, 1.0)


class Inputs(NamedTuple):
    q: torch.Tensor
    k_cache: torch.Tensor
    v_cache: torch.Tensor
    block_tables: torch.Tensor
    seq_lens: torch.Tensor


def make_inputs(spec: Spec, device: str | torch.device = "cpu", seed: int = 0,
                spare_blocks: int = 3) -> Inputs:
    g = torch.Generator().manual_seed(seed)
    dtype = DTYPES[spec.dtype]
    bs = spec.block_size
    need = [-(-n // bs) for n in spec.seq_lens]
    max_blocks = max([1, *need])
    num_blocks = sum(need) + spare_blocks
    shape = (num_blocks, 2, bs, spec.num_kv_heads, spec.head_dim)
    kv = torch.randn(shape, generator=g)
    if spec.kv_dtype:
        from .fp8 import quantize

        kv = torch.stack([quantize(kv[:, i], spec.scales[i]) for i in (0, 1)], dim=1)
    else:
        kv = kv.to(dtype)
    kv = kv.to(device)
    k_cache, v_cache = kv[:, 0], kv[:, 1]
    if not spec.strided:
        k_cache, v_cache = k_cache.contiguous(), v_cache.contiguous()
    # Scattered, distinct blocks for the sequences; the unused tail of each row points at random
    # live blocks, never at a harmless zero.
    perm = torch.randperm(num_blocks, generator=g)
    tables = torch.randint(0, num_blocks, (len(spec.seq_lens), max_blocks), generator=g)
    at = 0
    for s, n in enumerate(need):
        tables[s, :n] = perm[at:at + n]
        at += n
    q = torch.randn(len(spec.seq_lens), spec.num_q_heads, spec.head_dim, generator=g).to(dtype)
    lens = torch.tensor(spec.seq_lens, dtype=torch.int32)
    return Inputs(q.to(device), k_cache, v_cache, tables.to(torch.int32).to(device),
                  lens.to(device))


class Result(NamedTuple):
    name: str
    err_f64: float      # max |kernel - float64 reference|
    err_ref: float      # max |kernel - fp32 torch reference|
    score: float        # max |kernel - float64| / (atol + rtol * |float64|): <= 1 passes
    ok: bool


def _score(out: torch.Tensor, exact: torch.Tensor, atol: float, rtol: float) -> float:
    if not out.numel():
        return 0.0
    return ((out - exact).abs() / (atol + rtol * exact.abs())).max().item()


def check(spec: Spec, device: str | torch.device = "cpu", seed: int = 0) -> Result:
    from . import paged_decode, paged_decode_reference
    from .splits import SplitStrategy

    x = make_inputs(spec, device, seed)
    k_scale, v_scale = spec.scales
    kw = {"sliding_window": spec.window, "k_scale": k_scale, "v_scale": v_scale}
    out = paged_decode(*x, num_splits=spec.num_splits, strategy=SplitStrategy(merge=spec.merge),
                       **kw).double()
    ref = paged_decode_reference(*x, **kw).double()
    exact = _exact(x, spec)
    atol, rtol = TOLERANCE[spec.dtype]    # fp8: q's dtype's (module docstring)
    score = max(_score(out, exact, atol, rtol), _score(out, ref, atol, rtol))
    err_f64 = (out - exact).abs().max().item() if out.numel() else 0.0
    err_ref = (out - ref).abs().max().item() if out.numel() else 0.0
    ok = bool(torch.isfinite(out).all()) and score <= 1.0
    return Result(spec.name, err_f64, err_ref, score, ok)


def _exact(x: Inputs, spec: Spec) -> torch.Tensor:
    """The float64 reference without the final rounding to q's dtype."""
    from . import paged_decode_reference

    q64 = x.q.double()
    k_scale, v_scale = spec.scales
    return paged_decode_reference(q64, x.k_cache, x.v_cache, x.block_tables, x.seq_lens,
                                  sliding_window=spec.window, k_scale=k_scale, v_scale=v_scale,
                                  compute_dtype=torch.float64)


def device_specs() -> list[Spec]:
    """The matrix the GPU check runs (every layout, dtype, page size, length edge, window, split,
    fp8 cache, merge)."""
    lens = (0, 1, 15, 16, 17, 64, 100, 1000)
    specs = []
    for dtype in ("fp32", "fp16", "bf16"):
        for hq, hkv in ((8, 8), (32, 8), (8, 1), (12, 4)):
            for splits in (1, 5):
                specs.append(Spec(hq, hkv, 128, dtype, 16, lens, None, splits))
    for hq, hkv in ((8, 8), (32, 8)):
        for splits in (1, 5):
            specs.append(Spec(hq, hkv, 128, "bf16", 32, lens, None, splits))
    for w in (1, 16, 100, 4096):
        for splits in (1, 3):
            specs.append(Spec(32, 8, 128, "bf16", 16, (0, 1, 33, 700, 3000), w, splits))
    specs.append(Spec(32, 8, 128, "bf16", 16, (0, 5, 40000), None, None))  # the heuristic
    # fp8 caches: every layout, with and without window and splits, both merges
    for q_dtype in ("bf16", "fp16"):
        for hq, hkv in ((8, 8), (32, 8), (8, 1)):
            for splits in (1, 5):
                specs.append(Spec(hq, hkv, 128, q_dtype, 16, lens, None, splits, kv_dtype="fp8"))
    for w in (16, 100):
        specs.append(Spec(32, 8, 128, "bf16", 16, (0, 1, 33, 700, 3000), w, 3, kv_dtype="fp8"))
    specs.append(Spec(32, 8, 128, "bf16", 16, (0, 5, 40000), None, None, kv_dtype="fp8"))
    # the separate merge kernel (the measured path) beside the fused one
    for splits in (2, 5, 64):
        specs.append(Spec(32, 8, 128, "bf16", 16, lens, None, splits, merge="kernel"))
    specs.append(Spec(32, 8, 128, "bf16", 16, (0, 1, 33, 700, 3000), 100, 3, merge="kernel"))
    specs.append(Spec(16, 2, 64, "fp16", 16, (257, 3), None, 2, strided=False))
    specs.append(Spec(8, 2, 80, "bf16", 16, (257, 3), None, 3))               # d not a power of 2
    return specs
