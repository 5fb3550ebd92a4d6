"""Streaming kernels that measure the memory ceiling the decode kernel is compared with.

`copy` reads and writes every byte once (the copy bandwidth counts both); `read` only reads
(a sum), which is what decode mostly does. Both move 16-byte vectors in large tiles, which
reaches more of HBM's bandwidth than ``cudaMemcpy`` (torch's ``copy_``) does on Hopper.
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 8192  # int32 elements per program: 32 KiB in flight per program


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=ok), mask=ok)


@triton.jit
def _read(src, partial, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src + offs, mask=offs < n, other=0)
    tl.store(partial + pid, tl.sum(x, 0))


def copy(src, dst) -> None:
    """``dst[:] = src`` for contiguous int32 tensors of one size."""
    n = src.numel()
    _copy[(triton.cdiv(n, BLOCK),)](src, dst, n, BLOCK=BLOCK, num_warps=8)


def read(src, partial) -> None:
    """Read every element of the contiguous int32 ``src``; ``partial`` holds one int32 per tile."""
    n = src.numel()
    _read[(triton.cdiv(n, BLOCK),)](src, partial, n, BLOCK=BLOCK, num_warps=8)
