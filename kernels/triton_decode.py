"""Paged-attention decode in Triton: one program per (sequence, KV head[, split]).

Why this shape: decode is memory-bound (about 4 FLOP per byte), so the only thing that matters is
reading each KV byte once. A program owns one KV head of one sequence and computes *all* the query
heads of that GQA group against each K/V tile it loads (the group is packed into the M dimension of
``tl.dot``, padded to 16 rows), so a KV byte is read once per KV head, never once per query head.
Tiles of TILE_N tokens are gathered through the block table token by token, so the tile size is
independent of the page size. Softmax is online, in fp32, in base 2 (``scale * log2(e)`` folded into
one multiply).

When ``num_seqs * num_kv_heads`` programs would not fill the GPU, each sequence's keys are cut into
``num_splits`` tile-aligned pieces; stage 1 writes a normalised partial output and its log-sum-exp
per piece, and a second kernel merges them (Flash-Decoding).

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

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
LOG2E = 1.4426950408889634


class LaunchConfig(NamedTuple):
    """How stage 1 is launched: tokens per tile, warps, software-pipeline stages."""

    tile_n: int = 64
    num_warps: int = 4
    num_stages: int = 2


DEFAULT_CONFIG = LaunchConfig()


@triton.jit
def _stage1(Q, K, V, BT, SL, O, PO, PL,
            stride_qs, stride_qh,
            stride_kb, stride_kt, stride_kh,
            stride_vb, stride_vt, stride_vh,
            stride_bts, stride_os, stride_oh,
            qk_scale, window,
            GROUP: tl.constexpr, GROUP_PAD: tl.constexpr,
            HEAD_DIM: tl.constexpr, D_PAD: tl.constexpr,
            BLOCK_SIZE: tl.constexpr, TILE_N: tl.constexpr,
            SPLIT: tl.constexpr, DOT_FP32: tl.constexpr, IEEE: tl.constexpr):
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
    # so a tile covers whole pages whatever the window; split pieces are whole tiles.
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
    out = acc / tl.where(has, l_i, 1.0)[:, None]
    if SPLIT:
        base = (seq * num_q_heads + qh) * num_splits + split
        tl.store(PO + base[:, None] * HEAD_DIM + offs_d[None, :], out,
                 mask=row_ok[:, None] & d_ok[None, :])
        lse = tl.where(has, m_i + tl.log2(tl.where(has, l_i, 1.0)), float("-inf"))
        tl.store(PL + base, lse, mask=row_ok)
    else:
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


def _pow2(n: int, floor: int = 1) -> int:
    return max(floor, triton.next_power_of_2(max(1, n)))


def num_sms(device: torch.device) -> int | None:
    if device.type != "cuda":
        return None
    return torch.cuda.get_device_properties(device).multi_processor_count


def choose_num_splits(num_seqs: int, num_kv_heads: int, max_seq_len: int, sms: int | None, *,
                      tile_n: int = DEFAULT_CONFIG.tile_n, min_tiles_per_split: int = 4,
                      max_splits: int = 64) -> int:
    """How many pieces to cut each sequence into so the grid fills the GPU.

    No split when the (sequence, KV head) programs already give every SM two (a full wave at
    two or more resident programs per SM) or when the GPU is unknown (CPU, interpreter).
    Otherwise aim for about four programs per SM, keeping each piece at least
    ``min_tiles_per_split`` tiles long so the merge stays a small share of the traffic.
    """
    programs = num_seqs * num_kv_heads
    if not sms or programs == 0 or programs >= 2 * sms:
        return 1
    want = triton.cdiv(4 * sms, programs)
    longest = triton.cdiv(triton.cdiv(max_seq_len, tile_n), min_tiles_per_split)
    return max(1, min(want, longest, max_splits))


def paged_decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                 block_tables: torch.Tensor, seq_lens: torch.Tensor, *,
                 scale: float | None = None, sliding_window: int | None = None,
                 num_splits: int | None = None, max_seq_len: int | None = None,
                 config: LaunchConfig = DEFAULT_CONFIG, out: torch.Tensor | None = None
                 ) -> torch.Tensor:
    """Paged-attention decode (same contract as ``paged_decode_reference``).

    ``num_splits`` forces the split count (1 = single pass); by default ``choose_num_splits``
    picks it, which needs ``max_seq_len`` (read from ``seq_lens`` when not given: one sync).
    K/V may be strided views (e.g. of one ``[blocks, 2, page, heads, dim]`` tensor); the head dim
    must be contiguous.
    """
    num_seqs, num_q_heads, head_dim = q.shape
    _, block_size, num_kv_heads, _ = k_cache.shape
    if num_q_heads % num_kv_heads:
        raise ValueError(f"{num_q_heads} query heads do not split into {num_kv_heads} KV heads")
    if k_cache.shape != v_cache.shape or k_cache.stride(-1) != 1 or v_cache.stride(-1) != 1:
        raise ValueError("k_cache and v_cache must have one shape and a contiguous head dim")
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
        num_splits = choose_num_splits(num_seqs, num_kv_heads, max_seq_len, num_sms(q.device),
                                       tile_n=config.tile_n)
    is_fp32 = q.dtype == torch.float32
    dot_fp32 = INTERPRET and not is_fp32
    consts = {"GROUP": group, "GROUP_PAD": _pow2(group, 16), "HEAD_DIM": head_dim,
              "D_PAD": _pow2(head_dim, 16), "BLOCK_SIZE": block_size, "TILE_N": config.tile_n,
              "SPLIT": num_splits > 1, "DOT_FP32": dot_fp32, "IEEE": is_fp32 or dot_fp32}
    if num_splits > 1:
        part = torch.empty(num_seqs, num_q_heads, num_splits, head_dim, dtype=torch.float32,
                           device=q.device)
        lse = torch.empty(num_seqs, num_q_heads, num_splits, dtype=torch.float32, device=q.device)
    else:
        part = lse = out  # unused
    _stage1[(num_seqs, num_kv_heads, num_splits)](
        q, k_cache, v_cache, block_tables, seq_lens, out, part, lse,
        q.stride(0), q.stride(1),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2),
        block_tables.stride(0), out.stride(0), out.stride(1),
        scale * LOG2E, window,
        num_warps=config.num_warps, num_stages=config.num_stages, **consts)
    if num_splits > 1:
        _stage2[(num_seqs, num_q_heads)](
            part, lse, out, out.stride(0), out.stride(1), num_splits,
            HEAD_DIM=head_dim, D_PAD=consts["D_PAD"], SPLITS_PAD=_pow2(num_splits, 2),
            num_warps=4)
    return out
