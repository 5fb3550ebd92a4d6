"""Paged-attention decode in plain torch: the reference the Triton kernel is checked against.

Gather each sequence's keys and values through its block table, mask the positions the
sequence does not have (past ``seq_len``, or before the sliding window), softmax in ``compute_dtype``.
It is written for clarity, not speed; ``kernels.bench`` times a faster gather-then-SDPA baseline.
"""

from __future__ import annotations

import torch


def gather(cache: torch.Tensor, blocks: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
    """``cache[blocks, slots]``; a 1-byte cache (fp8) is indexed as its bytes, since advanced
    indexing of float8 tensors is not implemented on every device."""
    if cache.element_size() == 1 and cache.dtype != torch.uint8:
        return cache.view(torch.uint8)[blocks, slots].view(cache.dtype)
    return cache[blocks, slots]


def paged_decode_reference(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                           block_tables: torch.Tensor, seq_lens: torch.Tensor, *,
                           scale: float | None = None, sliding_window: int | None = None,
                           k_scale: float = 1.0, v_scale: float = 1.0,
                           compute_dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """One decode step of attention over a paged KV cache.

    q: [num_seqs, num_q_heads, head_dim]; k_cache, v_cache: [num_blocks, block_size, num_kv_heads,
    head_dim]; block_tables: [num_seqs, max_blocks] (entries past a sequence's last block are
    ignored, whatever they hold); seq_lens: [num_seqs]. Query head h reads KV head
    h // (num_q_heads // num_kv_heads). ``sliding_window`` W keeps only the last W keys; a
    sequence of length 0 gives zeros. The cache holds value / scale: a key is read as
    ``k_cache[...] * k_scale`` and a value as ``v_cache[...] * v_scale``, in ``compute_dtype``
    (vLLM's per-tensor KV scales; an fp8 cache is upcast exactly first). Returns
    [num_seqs, num_q_heads, head_dim] in q's dtype.
    """
    num_seqs, num_q_heads, head_dim = q.shape
    _, block_size, num_kv_heads, _ = k_cache.shape
    group = num_q_heads // num_kv_heads
    scale = head_dim ** -0.5 if scale is None else scale
    out = torch.zeros(num_seqs, num_q_heads, head_dim, dtype=compute_dtype, device=q.device)
    lens = seq_lens.tolist()
    for s, n in enumerate(lens):
        start = max(0, n - sliding_window) if sliding_window else 0
        if n <= start:
            continue  # nothing to attend to: zeros
        pos = torch.arange(start, n, device=q.device)
        blocks = block_tables[s].long()[pos // block_size]
        k = gather(k_cache, blocks, pos % block_size).to(compute_dtype) * k_scale  # [n, Hkv, D]
        v = gather(v_cache, blocks, pos % block_size).to(compute_dtype) * v_scale
        k = k.repeat_interleave(group, dim=1)                      # [n, Hq, D]
        v = v.repeat_interleave(group, dim=1)
        scores = torch.einsum("hd,nhd->hn", q[s].to(compute_dtype), k) * scale
        p = torch.softmax(scores, dim=-1)
        out[s] = torch.einsum("hn,nhd->hd", p, v)
    return out.to(q.dtype)
