"""Merging the pieces of a split decode (Flash-Decoding): a second kernel, or fused into stage 1.

Each piece leaves its output normalised by its own softmax sum, plus its log-sum-exp (base 2);
the merged output is the pieces' outputs weighted by ``2^(lse - max lse)``. Pieces with no key
(an empty range, a zero-length sequence) carry ``lse = -inf`` and weigh nothing; a row with no
key at all gets zeros.

``_stage2`` is the separate merge kernel (one program per (sequence, query head)), kept as it was
measured. ``merge_pieces`` is the same sum for one (sequence, KV head) group of query heads,
called by the stage-1 program that takes the last ticket of its group (``fused``): the ticket is
an ``acq_rel`` atomic taken after a CTA barrier, so every piece's stores (each program's, by all
its threads) are visible to the merging program, which reads them with ``.cg`` loads (from L2,
never a stale L1 line). The ticket counters live in a per-device workspace that the merging
program sets back to zero, so consecutive launches (and CUDA-graph replays) need no memset.
Contract: fused launches on one device run one at a time (stream-ordered), as a decode does.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

_COUNTERS: dict[torch.device, torch.Tensor] = {}
MIN_COUNTERS = 1 << 16     # (sequence, KV head) groups: 256 KB, enough for 1024 x 64 heads


def counters(groups: int, device: torch.device) -> torch.Tensor:
    """The zeroed int32 ticket counters for ``groups`` (sequence, KV head) groups on ``device``.

    Allocated once (at least ``MIN_COUNTERS``) and kept: each fused launch leaves them zero.
    Growing them while a CUDA graph is being captured would record the zeroing as a graph node
    and hand back uninitialised memory now, so that is refused: launch once before capturing.
    """
    have = _COUNTERS.get(device)
    if have is not None and have.numel() >= groups:
        return have
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        raise RuntimeError("the fused merge's counters must be allocated before CUDA-graph "
                           f"capture ({groups} groups): run the decode once eagerly first")
    made = torch.zeros(max(groups, MIN_COUNTERS), dtype=torch.int32, device=device)
    _COUNTERS[device] = made
    return made


@triton.jit
def merge_pieces(PO, PL, O, seq, qh, row_ok, offs_d, d_ok, num_splits, num_q_heads,
                 stride_os, stride_oh, HEAD_DIM: tl.constexpr, GROUP_PAD: tl.constexpr,
                 D_PAD: tl.constexpr):
    """Merge the ``num_splits`` pieces of query heads ``qh`` (rows) of sequence ``seq`` into O.

    An online sum over the pieces (running max, rescaled accumulator), in fp32.
    """
    m = tl.full([GROUP_PAD], float("-inf"), tl.float32)
    total = tl.zeros([GROUP_PAD], tl.float32)
    acc = tl.zeros([GROUP_PAD, D_PAD], tl.float32)
    base = (seq * num_q_heads + qh) * num_splits
    for p in range(num_splits):
        lse = tl.load(PL + base + p, mask=row_ok, other=float("-inf"), cache_modifier=".cg")
        part = tl.load(PO + (base + p)[:, None] * HEAD_DIM + offs_d[None, :],
                       mask=row_ok[:, None] & d_ok[None, :], other=0.0, cache_modifier=".cg")
        m_new = tl.maximum(m, lse)
        ref = tl.where(m_new > float("-inf"), m_new, 0.0)   # all -inf so far: weights 0, no NaN
        alpha = tl.exp2(m - ref)
        w = tl.exp2(lse - ref)
        acc = acc * alpha[:, None] + part * w[:, None]
        total = total * alpha + w
        m = m_new
    out = acc / tl.where(total > 0.0, total, 1.0)[:, None]
    tl.store(O + seq * stride_os + qh[:, None] * stride_oh + offs_d[None, :],
             out.to(O.dtype.element_ty), mask=row_ok[:, None] & d_ok[None, :])


@triton.jit
def _stage2(PO, PL, O, stride_os, stride_oh, num_splits,
            HEAD_DIM: tl.constexpr, D_PAD: tl.constexpr, SPLITS_PAD: tl.constexpr):
    """Merge the pieces of one (sequence, query head): weights 2^(lse - max lse)."""
    seq = tl.program_id(0)
    qh = tl.program_id(1)
    num_q_heads = tl.num_programs(1)
    offs_p = tl.arange(0, SPLITS_PAD)
    offs_d = tl.arange(0, D_PAD)
    p_ok = offs_p < num_splits
    d_ok = offs_d < HEAD_DIM
    base = (seq * num_q_heads + qh) * num_splits
    lse = tl.load(PL + base + offs_p, mask=p_ok, other=float("-inf"))
    m = tl.max(lse, 0)
    has = m > float("-inf")
    w = tl.where(p_ok & (lse > float("-inf")), tl.exp2(lse - tl.where(has, m, 0.0)), 0.0)
    part = tl.load(PO + (base + offs_p)[:, None] * HEAD_DIM + offs_d[None, :],
                   mask=p_ok[:, None] & d_ok[None, :], other=0.0)
    total = tl.sum(w, 0)
    out = tl.sum(part * w[:, None], 0) / tl.where(has, total, 1.0)
    tl.store(O + seq * stride_os + qh * stride_oh + offs_d, out.to(O.dtype.element_ty), mask=d_ok)


def merge_kernel(part: torch.Tensor, lse: torch.Tensor, out: torch.Tensor, num_splits: int,
                 head_dim: int, d_pad: int) -> None:
    """The separate merge: ``part`` [S, Hq, P, D] and ``lse`` [S, Hq, P] (fp32) into ``out``."""
    num_seqs, num_q_heads = out.shape[0], out.shape[1]
    _stage2[(num_seqs, num_q_heads)](
        part, lse, out, out.stride(0), out.stride(1), num_splits,
        HEAD_DIM=head_dim, D_PAD=d_pad, SPLITS_PAD=max(2, triton.next_power_of_2(num_splits)),
        num_warps=4)
