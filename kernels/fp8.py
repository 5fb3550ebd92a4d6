"""The fp8 KV cache as vLLM's ``--kv-cache-dtype fp8`` writes it, and its rounding error.

vLLM (0.33, NVIDIA) stores ``value / scale`` as ``float8_e4m3fn`` with one float ``k_scale`` and
one ``v_scale`` per attention layer (1.0, ``set_default_quant_scales``, unless the checkpoint
sets them; 0.33 has no ``calculate_kv_scales``) and reads ``fp8 * scale``. e4m3 keeps 3 mantissa bits: a stored normal value x is off the
exact one by at most half a spacing, ``2^(floor(log2|x|) - 4)``, i.e. at most 2^-4 of x; below
2^-6 (subnormals) the spacing is a constant 2^-9, so the error is at most 2^-10; 448 is the
largest value (the cast saturates).

That error belongs to the cache, not to the kernel: ``kernels.checks`` compares the kernel with
the float64 reference over the same stored bytes. `output_sigma` says how far the fp8 output may
then be from the output over the unquantized values: rounding errors taken as independent and
uniform within half a spacing (variance h^2 / 3), propagated to first order through the softmax
and the weighted sum of values.
"""

from __future__ import annotations

import torch

from .reference import gather

E4M3 = torch.float8_e4m3fn
E4M3_MAX = 448.0


def quantize(x: torch.Tensor, scale: float) -> torch.Tensor:
    """vLLM's write: ``x / scale`` cast to e4m3 (round to nearest, saturating at +-448)."""
    return (x.double() / scale).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3)


def half_spacing(stored: torch.Tensor) -> torch.Tensor:
    """Half the e4m3 spacing at each stored value (float64): the bound on its rounding error,
    in stored units. Normal values: 2^(e - 4) with e = floor(log2|x|); subnormals: 2^-10."""
    x = stored.double().abs()
    e = torch.floor(torch.log2(x.clamp_min(2.0 ** -6)))
    return torch.exp2(e - 4)


def output_sigma(q: torch.Tensor, k_stored: torch.Tensor, v_stored: torch.Tensor,
                 k_scale: float, v_scale: float, block_tables: torch.Tensor,
                 seq_lens: torch.Tensor, *, scale: float | None = None,
                 sliding_window: int | None = None) -> torch.Tensor:
    """First-order standard deviation of each output element's fp8 rounding error, [S, Hq, D].

    With p the attention weights, o the output, δ_j the score error of key j and η_j the value
    error: Δo ≈ Σ_j p_j δ_j (v_j - o) + Σ_j p_j η_j. Each key element's error has variance
    (k_scale h)^2 / 3 (h = `half_spacing`), so Var δ_j = scale^2 Σ_d q_d^2 Var e_jd; likewise for
    values. Computed in float64 from the stored (dequantized) values, which are within half a
    spacing of the exact ones.
    """
    num_seqs, num_q_heads, head_dim = q.shape
    block_size, num_kv_heads = k_stored.shape[1], k_stored.shape[2]
    group = num_q_heads // num_kv_heads
    scale = head_dim ** -0.5 if scale is None else scale
    sigma = torch.zeros(num_seqs, num_q_heads, head_dim, dtype=torch.float64)
    for s, n in enumerate(seq_lens.tolist()):
        start = max(0, n - sliding_window) if sliding_window else 0
        if n <= start:
            continue
        pos = torch.arange(start, n)
        blocks = block_tables[s].long()[pos // block_size]
        ks = gather(k_stored, blocks, pos % block_size)
        vs = gather(v_stored, blocks, pos % block_size)
        k = (ks.double() * k_scale).repeat_interleave(group, dim=1)           # [n, Hq, D]
        v = (vs.double() * v_scale).repeat_interleave(group, dim=1)
        var_k = ((half_spacing(ks) * k_scale) ** 2 / 3).repeat_interleave(group, dim=1)
        var_v = ((half_spacing(vs) * v_scale) ** 2 / 3).repeat_interleave(group, dim=1)
        qs = q[s].double()                                                    # [Hq, D]
        p = torch.softmax(torch.einsum("hd,nhd->hn", qs, k) * scale, dim=-1)  # [Hq, n]
        o = torch.einsum("hn,nhd->hd", p, v)
        var_score = scale ** 2 * torch.einsum("hd,nhd->hn", qs ** 2, var_k)  # [Hq, n]
        dv = v - o[None]                                                      # [n, Hq, D]
        var = torch.einsum("hn,nhd->hd", p ** 2 * var_score, dv ** 2)
        var += torch.einsum("hn,nhd->hd", p ** 2, var_v)
        sigma[s] = var.sqrt()
    return sigma
