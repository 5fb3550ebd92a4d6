"""Paged-attention decode in Triton: one program per (sequence, KV head[, split]).

Why this shape: decode is memory-bound (about 4 FLOP per byte), so the only thing that matters is
reading each KV byte once. A program owns one KV head of one sequence and computes *all* the query
heads of that GQA group against each K/V tile it loads (the group is packed into the M dimension of
``tl.dot``, padded to 16 rows), so a KV byte is read once per KV head, never once per query head.
Tiles of TILE_N tokens are gathered through the block table token by token, so the tile size is
independent of the page size. Softmax is online, in fp32, in base 2 (``scale * log2(e)`` folded into
one multiply).

An fp8 cache (``torch.float8_e4m3fn``, vLLM's ``--kv-cache-dtype fp8``: stored = value / scale,
one ``k_scale`` and one ``v_scale`` per tensor) is read as fp8 (half the bytes) and converted to
q's dtype in registers, which is exact (every e4m3 value is a bf16 and an fp16 value); the scales
are not applied per element but folded: ``k_scale`` into the score multiplier, ``v_scale`` into the
final normalisation, both in fp32. So the dots see exactly the stored values.

When ``num_seqs * num_kv_heads`` programs would not fill the GPU, each sequence's keys are cut into
``num_splits`` tile-aligned pieces; each piece writes a normalised partial output and its
log-sum-exp, merged by a second kernel or by the last program of the group (``kernels.splits``,
``kernels.merge``).

Works with Triton 3.6 (the GPU machine) and 3.9 (CI). Under ``TRITON_INTERPRET=1`` it runs on CPU
tensors; the interpreter multiplies bf16 bit patterns as integers, so there (only) the dot operands
are upcast to fp32 (``DOT_FP32``).
"""

from __future__ import annotations

import os
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from .merge import counters, merge_kernel, merge_pieces
from .splits import (
    DEFAULT_STRATEGY,
    MERGES,
    SplitStrategy,
    choose_num_splits,
    num_sms,
    pick_num_splits,
)

__all__ = ["DEFAULT_CONFIG", "FP8_DTYPES", "INTERPRET", "LaunchConfig", "SplitStrategy",
           "choose_num_splits", "num_sms", "paged_decode"]

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
LOG2E = 1.4426950408889634
# KV cache dtypes read as fp8 and converted in registers (vLLM's fp8 = fp8_e4m3 on NVIDIA).
FP8_DTYPES = (torch.float8_e4m3fn,)


class LaunchConfig(NamedTuple):
    """How stage 1 is launched: tokens per tile, warps, software-pipeline stages."""

    tile_n: int = 64
    num_warps: int = 4
    num_stages: int = 2


DEFAULT_CONFIG = LaunchConfig()


@triton.jit
def _stage1(Q, K, V, BT, SL, O, PO, PL, CNT,
            stride_qs, stride_qh,
            stride_kb, stride_kt, stride_kh,
            stride_vb, stride_vt, stride_vh,
            stride_bts, stride_os, stride_oh,
            qk_scale, v_scale, window,
            GROUP: tl.constexpr, GROUP_PAD: tl.constexpr,
            HEAD_DIM: tl.constexpr, D_PAD: tl.constexpr,
            BLOCK_SIZE: tl.constexpr, TILE_N: tl.constexpr,
            SPLIT: tl.constexpr, FUSED: tl.constexpr, KV_CAST: tl.constexpr,
            DOT_FP32: tl.constexpr, IEEE: tl.constexpr):
    seq = tl.program_id(0)
    kvh = tl.program_id(1)
    split = tl.program_id(2)
    num_splits = tl.num_programs(2)
    num_q_heads = tl.num_programs(1) * GROUP

    rows = tl.arange(0, GROUP_PAD)           # query heads of this group (padded)
    offs_d = tl.arange(0, D_PAD)
    row_ok = rows < GROUP
    d_ok = offs_d < HEAD_DIM
    qh = kvh * GROUP + rows

    # Keys this sequence attends to: [start, seq_len). Tiles are aligned to TILE_N from position 0,
    # so a tile covers whole pages whatever the window; split pieces are whole tiles. Lanes outside
    # [start, seq_len) are masked off: no byte of them is read.
    seq_len = tl.load(SL + seq)
    start = tl.where(window > 0, tl.maximum(seq_len - window, 0), 0)
    first_tile = start // TILE_N
    num_tiles = tl.maximum(tl.cdiv(seq_len, TILE_N) - first_tile, 0)
    per_split = tl.cdiv(num_tiles, num_splits)
    tile_lo = first_tile + split * per_split
    tile_hi = tl.minimum(tile_lo + per_split, first_tile + num_tiles)

    q = tl.load(Q + seq * stride_qs + qh[:, None] * stride_qh + offs_d[None, :],
                mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    if DOT_FP32:
        q = q.to(tl.float32)

    m_i = tl.full([GROUP_PAD], float("-inf"), tl.float32)
    l_i = tl.zeros([GROUP_PAD], tl.float32)
    acc = tl.zeros([GROUP_PAD, D_PAD], tl.float32)
    k_base = K + kvh * stride_kh
    v_base = V + kvh * stride_vh
    bt_row = BT + seq * stride_bts

    for t in range(tile_lo, tile_hi):
        offs_n = t * TILE_N + tl.arange(0, TILE_N)
        n_ok = (offs_n >= start) & (offs_n < seq_len)
        blk = tl.load(bt_row + offs_n // BLOCK_SIZE, mask=n_ok, other=0).to(tl.int64)
        slot = offs_n % BLOCK_SIZE
        # K is loaded transposed, [D, TILE_N], so q @ k needs no shuffle.
        k = tl.load(k_base + blk[None, :] * stride_kb + slot[None, :] * stride_kt + offs_d[:, None],
                    mask=n_ok[None, :] & d_ok[:, None], other=0.0)
        v = tl.load(v_base + blk[:, None] * stride_vb + slot[:, None] * stride_vt + offs_d[None, :],
                    mask=n_ok[:, None] & d_ok[None, :], other=0.0)
        if KV_CAST:        # fp8 -> q's dtype: exact; the scales are folded in, not applied here
            k = k.to(Q.dtype.element_ty)
            v = v.to(Q.dtype.element_ty)
        if DOT_FP32:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        if IEEE:
            s = tl.dot(q, k, input_precision="ieee")
        else:
            s = tl.dot(q, k)
        s = tl.where(n_ok[None, :], s * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))     # every tile holds >= 1 valid key: finite
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if IEEE:
            acc += tl.dot(p.to(v.dtype), v, input_precision="ieee")
        else:
            acc += tl.dot(p.to(v.dtype), v)
        m_i = m_new

    has = l_i > 0.0                               # false: no keys (seq_len 0 or an empty piece)
    out = acc * (v_scale / tl.where(has, l_i, 1.0))[:, None]
    if SPLIT:
        base = (seq * num_q_heads + qh) * num_splits + split
        tl.store(PO + base[:, None] * HEAD_DIM + offs_d[None, :], out,
                 mask=row_ok[:, None] & d_ok[None, :])
        lse = tl.where(has, m_i + tl.log2(tl.where(has, l_i, 1.0)), float("-inf"))
        tl.store(PL + base, lse, mask=row_ok)
        if FUSED:
            # Every thread's stores above come before the ticket (barrier, then acq_rel): the
            # program that takes the group's last ticket sees all pieces and merges them.
            tl.debug_barrier()
            group = seq * tl.num_programs(1) + kvh
            ticket = tl.atomic_add(CNT + group, 1, sem="acq_rel", scope="gpu")
            if ticket == num_splits - 1:
                merge_pieces(PO, PL, O, seq, qh, row_ok, offs_d, d_ok, num_splits, num_q_heads,
                             stride_os, stride_oh, HEAD_DIM, GROUP_PAD, D_PAD)
                tl.store(CNT + group, 0)           # ready for the next launch
    else:
        tl.store(O + seq * stride_os + qh[:, None] * stride_oh + offs_d[None, :],
                 out.to(O.dtype.element_ty), mask=row_ok[:, None] & d_ok[None, :])


def _pow2(n: int, floor: int = 1) -> int:
    return max(floor, triton.next_power_of_2(max(1, n)))


def paged_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                 block_tables: torch.Tensor, seq_lens: torch.Tensor, *,
                 scale: float | None = None, sliding_window: int | None = None,
                 k_scale: float = 1.0, v_scale: float = 1.0,
                 num_splits: int | None = None, max_seq_len: int | None = None,
                 strategy: SplitStrategy = DEFAULT_STRATEGY,
                 config: LaunchConfig = DEFAULT_CONFIG, out: torch.Tensor | None = None
                 ) -> torch.Tensor:
    """Paged-attention decode (same contract as ``paged_decode_reference``).

    ``k_scale`` / ``v_scale``: the cache holds value / scale (vLLM's per-tensor KV scales; any
    cache dtype, fp8 e4m3 being the one vLLM scales). ``num_splits`` forces the split count
    (1 = single pass); by default ``strategy.rule`` picks it, which needs ``max_seq_len`` (read
    from ``seq_lens`` when not given: one sync); ``strategy.merge`` says how pieces are merged
    (``kernels.splits``). K/V may be strided views (e.g. of one ``[blocks, 2, page, heads, dim]``
    tensor); the head dim must be contiguous.
    """
    num_seqs, num_q_heads, head_dim = q.shape
    _, block_size, num_kv_heads, _ = k_cache.shape
    if num_q_heads % num_kv_heads:
        raise ValueError(f"{num_q_heads} query heads do not split into {num_kv_heads} KV heads")
    if k_cache.shape != v_cache.shape or k_cache.stride(-1) != 1 or v_cache.stride(-1) != 1:
        raise ValueError("k_cache and v_cache must have one shape and a contiguous head dim")
    if k_cache.dtype != v_cache.dtype:
        raise ValueError(f"k_cache is {k_cache.dtype} but v_cache is {v_cache.dtype}")
    kv_cast = k_cache.dtype in FP8_DTYPES
    if not kv_cast and k_cache.dtype != q.dtype:
        raise ValueError(f"a {k_cache.dtype} cache needs a {k_cache.dtype} q (got {q.dtype}); "
                         "only fp8 caches are converted")
    if strategy.merge not in MERGES:
        raise ValueError(f"unknown merge {strategy.merge!r} (known: {', '.join(MERGES)})")
    if q.stride(-1) != 1:
        q = q.contiguous()
    group = num_q_heads // num_kv_heads
    scale = head_dim ** -0.5 if scale is None else scale
    window = int(sliding_window or 0)
    if out is None:
        out = torch.empty_like(q)
    if num_seqs == 0:
        return out
    if num_splits is None:
        if max_seq_len is None:
            max_seq_len = int(seq_lens.max()) if num_seqs else 0
        if window:
            max_seq_len = min(max_seq_len, window + config.tile_n)
        num_splits = pick_num_splits(strategy, num_seqs, num_kv_heads, max_seq_len,
                                     num_sms(q.device), config.tile_n, fp8=kv_cast)
    is_fp32 = q.dtype == torch.float32
    dot_fp32 = INTERPRET and not is_fp32
    split = num_splits > 1
    fused = split and strategy.merge == "fused"
    d_pad = _pow2(head_dim, 16)
    consts = {"GROUP": group, "GROUP_PAD": _pow2(group, 16), "HEAD_DIM": head_dim,
              "D_PAD": d_pad, "BLOCK_SIZE": block_size, "TILE_N": config.tile_n,
              "SPLIT": split, "FUSED": fused, "KV_CAST": kv_cast, "DOT_FP32": dot_fp32,
              "IEEE": is_fp32 or dot_fp32}
    part = lse = cnt = out  # unused unless split (fused: cnt)
    if split:
        part = torch.empty(num_seqs, num_q_heads, num_splits, head_dim, dtype=torch.float32,
                           device=q.device)
        lse = torch.empty(num_seqs, num_q_heads, num_splits, dtype=torch.float32, device=q.device)
        if fused:
            cnt = counters(num_seqs * num_kv_heads, q.device)
    _stage1[(num_seqs, num_kv_heads, num_splits)](
        q, k_cache, v_cache, block_tables, seq_lens, out, part, lse, cnt,
        q.stride(0), q.stride(1),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2),
        block_tables.stride(0), out.stride(0), out.stride(1),
        scale * LOG2E * float(k_scale), float(v_scale), window,
        num_warps=config.num_warps, num_stages=config.num_stages, **consts)
    if split and not fused:
        merge_kernel(part, lse, out, num_splits, head_dim, d_pad)
    return out
