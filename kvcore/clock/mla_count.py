"""vLLM 0.33 perf.py's count of multi-head latent attention (`MLAAttentionMetrics`, component
``mla_attn``): DeepSeek-V2/V3 and Kimi-K2, whose attention perf.py bills apart from the GQA
``attn`` component (which it skips for them).

What it bills, per layer and per GPU (heads split by TP, at least one; the latent projection
``kv_a`` replicated on every rank, as vLLM runs it):
* the query path through the ``q_lora_rank`` bottleneck (``q_a``, ``q_b``), or straight from the
  hidden state (``q``) when the config has no query compression (V2-Lite);
* ``kv_a``: hidden state to the cached latent plus the rope key (``kv_lora_rank +
  qk_rope_head_dim``); ``kv_b``: latent to every head's no-rope key and value;
* attention over the whole context (not causal) in the heads' own dims (QK in ``qk_nope +
  qk_rope``, AV in ``v_head_dim``); prefill reads every head's decompressed K and V for its
  context at the activation size, a decode the latent from the cache at the KV cache size;
* one latent a token written to the cache, and the output projection.

Arithmetic as perf.py's: the layer count is an integer (``num_hidden_layers // pp``, unlike the
GQA component's float), and only the weight terms go through ``int()`` (the weight size may be
0.5), in perf.py's order of multiplication.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.models.geometry import MlaGeometry

if TYPE_CHECKING:   # (vllm_count imports this module: types only, no import cycle at run time)
    from kvcore.clock.vllm_count import Counts, VllmShape, _Sums


def mla_attention(sh: VllmShape, m: MlaGeometry, s: _Sums, out: Counts) -> None:
    """Add perf.py's ``mla_attn.*`` FLOPs and read / write bytes of the batch ``s``."""
    L = sh.num_hidden_layers // sh.pp_size
    D, a, cb, w = sh.hidden_size, sh.activation_byte_size, sh.cache_byte_size, sh.weight_byte_size
    assert w is not None
    q = max(1, sh.num_attention_heads // sh.tp_size)
    qk = m.qk_nope_head_dim + m.qk_rope_head_dim
    v, c, qr = m.v_head_dim, m.kv_lora_rank, m.q_lora_rank
    nv = m.qk_nope_head_dim + v
    latent = c + m.qk_rope_head_dim
    T = s.tokens
    f, r, wr = out.flops, out.read_bytes, out.write_bytes
    if qr is not None:
        f["mla_attn.q_a_proj"] = 2 * T * D * qr * L
        f["mla_attn.q_b_proj"] = 2 * T * qr * q * qk * L
    else:
        f["mla_attn.q_proj"] = 2 * T * D * q * qk * L
    f["mla_attn.kv_a_proj"] = 2 * T * D * latent * L
    f["mla_attn.kv_b_proj"] = 2 * T * c * q * nv * L
    f["mla_attn.attn_qk"] = 2 * q * s.tc * qk * L
    f["mla_attn.attn_av"] = 2 * q * s.tc * v * L
    f["mla_attn.out_proj"] = 2 * T * q * v * D * L

    if qr is not None:
        r["mla_attn.q_a_input"] = T * D * a * L
        r["mla_attn.q_a_weight"] = int(D * qr * w * L)
        r["mla_attn.q_b_input"] = T * qr * a * L
        r["mla_attn.q_b_weight"] = int(qr * q * qk * w * L)
    else:
        r["mla_attn.q_input"] = T * D * a * L
        r["mla_attn.q_weight"] = int(D * q * qk * w * L)
    r["mla_attn.kv_a_input"] = T * D * a * L
    r["mla_attn.kv_a_weight"] = int(D * latent * w * L)
    r["mla_attn.kv_b_input"] = T * c * a * L
    r["mla_attn.kv_b_weight"] = int(c * q * nv * w * L)
    # (no key at all in a step without tokens, as perf.py)
    if s.pf_tokens > 0:
        r["mla_attn.attn_input"] = (s.pf_tokens * q * qk * a * L
                                    + s.pf_ctx * q * (qk + v) * a * L)
    if s.dc_tokens > 0:
        r["mla_attn.attn_input"] = r.get("mla_attn.attn_input", 0) + (
            s.dc_tokens * q * qk * a * L + s.dc_ctx * latent * cb * L)
    r["mla_attn.out_input"] = T * q * v * a * L
    r["mla_attn.out_weight"] = int(q * v * D * w * L)

    if qr is not None:
        wr["mla_attn.q_a_output"] = T * qr * a * L
        wr["mla_attn.q_b_output"] = T * q * qk * a * L
    else:
        wr["mla_attn.q_output"] = T * q * qk * a * L
    wr["mla_attn.kv_a_output"] = T * latent * a * L
    wr["mla_attn.kv_b_output"] = T * q * nv * a * L
    wr["mla_attn.kv_cache"] = T * latent * cb * L
    wr["mla_attn.out_output"] = T * D * a * L
