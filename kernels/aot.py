"""Compile the decode kernels for a GPU that is not here (sm_90 by default) and report their resources.

Used by CI, which has no GPU: Triton compiles to PTX and cubin with its bundled ptxas, and
``ptxas -v`` says how many registers a thread needs and how many bytes it spills. It catches what the interpreter
cannot: dot shapes the hardware refuses, shared-memory overflow, register spills.
Must run in a process without ``TRITON_INTERPRET``.

    python -m kernels.aot        # prints one line per configuration
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from typing import NamedTuple

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from .merge import _stage2
from .triton_decode import DEFAULT_CONFIG, LaunchConfig, _pow2, _stage1

_DTYPES = {"fp32": "fp32", "fp16": "fp16", "bf16": "bf16", "fp8": "fp8e4nv"}


class Resources(NamedTuple):
    name: str
    n_regs: int
    n_spills: int     # bytes of spill stores per thread
    shared: int
    ptx: str


def ptxas(capability: int) -> str:
    """The ptxas Triton itself uses for this architecture (3.9 has a newer one for sm_90+)."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas
        return get_ptxas(capability).path
    except ImportError:  # older Triton: one ptxas
        from triton import knobs
        return knobs.nvidia.ptxas.path


def _usage(ptx: str, capability: int) -> tuple[int, int]:
    """Registers and spill-store bytes per thread, from ``ptxas -v`` on the kernel's PTX."""
    arch = f"sm_{capability}a" if capability >= 90 else f"sm_{capability}"
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        log = subprocess.run([ptxas(capability), "-v", "--regAllocOptLevel=2", f"--gpu-name={arch}",
                              src, "-o", os.path.join(tmp, "k.o")],
                             check=True, capture_output=True, text=True).stderr
    regs = re.search(r"Used (\d+) registers", log)
    spills = re.search(r"(\d+) bytes spill stores", log)
    assert regs is not None and spills is not None     # (ptxas -v prints both)
    return int(regs.group(1)), int(spills.group(1))


def _aligned(fn, names: list[str]) -> dict:
    """The JIT's specialisation: 16-byte aligned pointers and strides divisible by 16."""
    return {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in names}


def compile_stage1(dtype: str = "bf16", group: int = 4, head_dim: int = 128, block_size: int = 16,
                   split: bool = False, config: LaunchConfig = DEFAULT_CONFIG,
                   capability: int = 90, kv_dtype: str | None = None,
                   fused: bool = True) -> Resources:
    """Stage 1 for q in ``dtype`` over a cache in ``kv_dtype`` (default: ``dtype``); a split
    launch merges ``fused`` (the last program) or leaves it to stage 2."""
    e = _DTYPES[dtype]
    kv = _DTYPES[kv_dtype or dtype]
    ptrs = {"Q": e, "K": kv, "V": kv, "BT": "i32", "SL": "i32", "O": e, "PO": "fp32",
            "PL": "fp32", "CNT": "i32"}
    ints = ["stride_qs", "stride_qh", "stride_kb", "stride_kt", "stride_kh", "stride_vb",
            "stride_vt", "stride_vh", "stride_bts", "stride_os", "stride_oh"]
    sig = {k: "*" + v for k, v in ptrs.items()} | {k: "i32" for k in ints}
    sig |= {"qk_scale": "fp32", "v_scale": "fp32", "window": "i32"}
    consts = {"GROUP": group, "GROUP_PAD": _pow2(group, 16), "HEAD_DIM": head_dim,
              "D_PAD": _pow2(head_dim, 16), "BLOCK_SIZE": block_size, "TILE_N": config.tile_n,
              "SPLIT": split, "FUSED": split and fused, "KV_CAST": kv != e, "DOT_FP32": False,
              "IEEE": dtype == "fp32"}
    sig |= {k: "constexpr" for k in consts}
    # Every stride of a [blocks, page, heads, 128] cache and of q/out is a multiple of 16 elements;
    # the block-table row stride usually is too (max_blocks padded), as the JIT would see it.
    attrs = _aligned(_stage1, list(ptrs) + [s for s in ints if s != "stride_bts"])
    src = ASTSource(_stage1, sig, consts, attrs)
    k = triton.compile(src, target=GPUTarget("cuda", capability, 32),
                       options={"num_warps": config.num_warps, "num_stages": config.num_stages})
    merge = ("fused" if fused else "kernel") if split else "none"
    name = (f"stage1 {dtype} kv={kv_dtype or dtype} group={group} d={head_dim} "
            f"page={block_size} split={split} merge={merge} {config}")
    return Resources(name, *_usage(k.asm["ptx"], capability), k.metadata.shared, k.asm["ptx"])


def compile_stage2(head_dim: int = 128, splits_pad: int = 64, capability: int = 90) -> Resources:
    sig = {"PO": "*fp32", "PL": "*fp32", "O": "*bf16", "stride_os": "i32", "stride_oh": "i32",
           "num_splits": "i32", "HEAD_DIM": "constexpr", "D_PAD": "constexpr",
           "SPLITS_PAD": "constexpr"}
    consts = {"HEAD_DIM": head_dim, "D_PAD": _pow2(head_dim, 16), "SPLITS_PAD": splits_pad}
    src = ASTSource(_stage2, sig, consts, _aligned(_stage2, ["PO", "PL", "O"]))
    k = triton.compile(src, target=GPUTarget("cuda", capability, 32), options={"num_warps": 4})
    return Resources(f"stage2 d={head_dim} splits<={splits_pad}", *_usage(k.asm["ptx"], capability),
                     k.metadata.shared, k.asm["ptx"])


def production() -> list[Resources]:
    """The configurations the GPU runs: every launch config the benchmark sweeps (bf16, Llama
    heads), the split path with either merge, MHA in fp16, page 32, a head dim that is not a
    power of two, and fp8 caches under bf16 and fp16 queries (single pass and fused split)."""
    from .bench_case import SWEEP

    out = [compile_stage1(config=LaunchConfig(*c)) for c in SWEEP]
    out += [compile_stage1(split=True), compile_stage1(split=True, fused=False),
            compile_stage1(dtype="fp16", group=1, block_size=32),
            compile_stage1(dtype="bf16", group=3, head_dim=80),
            compile_stage1(kv_dtype="fp8"), compile_stage1(kv_dtype="fp8", split=True),
            compile_stage1(dtype="fp16", kv_dtype="fp8", group=1), compile_stage2()]
    return out


def main() -> int:
    results = production()
    if "--json" in sys.argv:
        print(json.dumps([{"name": r.name, "regs": r.n_regs, "spills": r.n_spills,
                           "shared": r.shared, "mma": "mma.sync" in r.ptx,
                           "cp_async": "cp.async" in r.ptx} for r in results]))
    else:
        for r in results:
            print(f"{r.name}: regs={r.n_regs} spills={r.n_spills} smem={r.shared}")
    return 1 if any(r.n_spills for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
