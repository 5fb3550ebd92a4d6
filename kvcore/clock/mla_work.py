"""The work the roofline clock times for multi-head latent attention (DeepSeek-V2/V3, Kimi-K2).

It is perf.py's MLA count (`kvcore.clock.mla_count`), regrouped into four kernel groups, and
departs from it where vLLM 0.33's MLA runs work perf.py leaves out (its `mla_attention.py`):

* ``q_proj`` (``q_a`` + ``q_b``, or ``q``) and ``o_proj``: perf.py's count, weights at their
  stored size;
* ``kv_proj``: ``kv_a`` (hidden state to the latent and the rope key) and ``kv_b`` (latent to
  every head's no-rope key and value) for each new token, as perf.py (on the decode path the
  two absorbed BMMs, W_UK on the query and W_UV on the output, cost the same FLOPs and weights
  as ``kv_b``); plus, for a prefill chunk after a cached prefix, the prefix's latents read from
  the cache and up-projected through ``kv_b`` (vLLM's chunked-prefill context pass), which
  perf.py does not bill;
* ``attention``: requests longer than the decode path takes (below) run the compute-friendly
  path (per head, QK in ``qk_nope + qk_rope`` dims and AV in ``v_head_dim``), causal, reading
  every head's decompressed K and V at the activation size, as perf.py bills a prefill; the
  others (decodes, new requests after a hit and, where the backend takes them, short prefill
  chunks, all of which perf.py bills by its own split) run the absorbed path: a query in latent space against the cached latents, QK in ``kv_lora_rank +
  qk_rope_head_dim`` dims and AV in ``kv_lora_rank`` (perf.py counts their FLOPs in the heads'
  dims, 3.4x fewer for DeepSeek-V3), reading one latent a token at the KV cache size. The query
  read and the latent written to the cache are perf.py's.

The split of requests by path is the GPU's backend's (`WorkShape.mla_decode_tokens`,
`kvcore.models.mla.mla_decode_query_len`): Hopper's FlashAttention MLA runs queries of up to
512 tokens on the decode path (FlashMLA, with an fp8 cache, 128), the others one token; with
speculative decoding every one takes a verification's 1 + K tokens there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.clock.linear_form import Group, vec

if TYPE_CHECKING:   # (work.py imports this module)
    from kvcore.clock.work import WorkShape


def mla_groups(ws: WorkShape) -> list[Group]:
    """The MLA layers' kernel groups on one GPU (summed over layers), as linear forms."""
    g, a, kvb, w = ws.g, ws.act, ws.kv_bytes, ws.attn_w
    m = g.mla
    assert m is not None
    L, D, q = g.count("mla"), g.hidden_size, ws.q_heads
    qk = m.qk_nope_head_dim + m.qk_rope_head_dim
    v, c, qr = m.v_head_dim, m.kv_lora_rank, m.q_lora_rank
    nv = m.qk_nope_head_dim + v
    latent = m.latent_size
    if qr is not None:
        q_params, q_act = D * qr + qr * q * qk, D + 2 * qr + q * qk
    else:
        q_params, q_act = D * q * qk, D + q * qk
    kv_params = D * latent + c * q * nv
    mha_kv = q * (qk + v) * a               # one context token's decompressed K and V
    mha_pair, mqa_pair = 2 * q * (qk + v), 2 * q * (2 * c + m.qk_rope_head_dim)
    return [
        Group("q_proj", "gemm", L, vec(tokens=2 * q_params * L), int(q_params * w * L),
              vec(tokens=q_act * a * L)),
        # a cached prefix token: its latent read from the cache, gathered into the workspace,
        # up-projected (kv_b's input read, every head's K and V written)
        Group("kv_proj", "gemm", L, vec(tokens=2 * kv_params * L, prefix_ctx=2 * c * q * nv * L),
              int(kv_params * w * L),
              vec(tokens=(D + latent + c + q * nv) * a * L,
                  prefix_ctx=(latent * kvb + (latent + c + q * nv) * a) * L)),
        # full_pairs and full_ctx cover every request; latent_pairs and latent_ctx (the
        # decode path's requests' pairs and contexts) swap their share from the decompressed
        # form to the latent one
        Group("attention", "attention", L,
              vec(full_pairs=mha_pair * L, latent_pairs=(mqa_pair - mha_pair) * L), 0,
              vec(tokens=(q * qk * a + latent * kvb) * L, full_ctx=mha_kv * L,
                  latent_ctx=(latent * kvb - mha_kv) * L)),
        Group("o_proj", "gemm", L, vec(tokens=2 * q * v * D * L), int(q * v * D * w * L),
              vec(tokens=(q * v + D) * a * L)),
    ]
