"""One tensor-parallel rank's parameters of Kimi Linear (`kvcore.models.kimi_linear`), as
vLLM 0.33 builds them (vllm/models/kimi_k3/nvidia/model.py, mla.py, and
model_executor/layers/mamba/gdn/kimi_gdn_linear_attn.py); checked tensor by tensor on the meta
device at TP 1, 2, 4 and 8: tests/data/kimi_linear/answers.json.

* KDA layer (P = heads x head_dim): ``in_proj_qkvgfab`` (q, k, v split by TP, one beta a head
  split, and the gate's first projection ``f_a``, head_dim wide, whole on every rank),
  ``f_b_proj`` and ``g_b_proj`` (head_dim -> P, split), ``g_a_proj`` (hidden -> head_dim,
  replicated), ``o_proj``; float32 whatever the model dtype: the packed conv over q, k and v
  (P x 3 x kernel, split), ``dt_bias`` (P, split), ``A_log`` (a head, split); the gated output
  norm (head_dim, whole).
* MLA layer: DeepSeek's (`rank_params.attention`), with ``g_proj`` (hidden -> heads x
  v_head_dim, split) where ``mla_use_output_gate``.
* MoE layer (from ``first_k_dense_replace``, every ``moe_layer_freq``-th): the router (model
  dtype, whole) and its float32 ``e_score_correction_bias``, the routed experts at a width
  padded to 256 a rank where TP splits it thinner (KimiMoE), the shared experts
  (``num_shared_experts`` x ``moe_intermediate_size``, unpadded); else a dense MLP.
* The LM head is built whatever ``tie_word_embeddings`` says (vLLM never ties it here).
"""

from __future__ import annotations

from kvcore.models import rank_params as rp
from kvcore.models.geometry import ModelGeometry
from kvcore.models.kimi_linear import padded_moe_width


def kda_params(g: ModelGeometry, tp: int, led: rp.Ledger) -> None:
    """A KDA layer's parameters on one rank (its ``self_attn``)."""
    m = g.mamba
    assert m is not None
    h, heads, dim = g.hidden_size, m.n_heads, m.d_head
    p = heads * dim // tp
    led.layer += h * (3 * p + heads // tp + dim) + 2 * dim * p + h * dim + p * h
    led.fp32 += 3 * p * m.d_conv + p + heads // tp
    led.model += dim


def kimi_linear_ledger(g: ModelGeometry, tp: int, layer_range: range | None, first: bool,
                       last: bool) -> rp.Ledger:
    led = rp.Ledger()
    h = g.hidden_size
    vh = rp.vocab_rows(g, tp) * h
    led.model += (vh if first else 0) + (vh + h if last else 0)
    m = g.mla
    for i, kind in enumerate(g.layer_kinds):
        if layer_range is not None and i not in layer_range:
            continue
        led.model += 2 * h
        if kind == "mamba":
            kda_params(g, tp, led)
        else:
            rp.attention(g, tp, led)
            if g.head_gate and m is not None:
                led.layer += h * g.num_attention_heads * m.v_head_dim // tp
        if g.moe_layers[i]:
            e = g.num_experts
            led.model += h * e
            led.fp32 += e
            led.layer += e * 3 * h * padded_moe_width(g.moe_intermediate_size, tp) // tp
            led.layer += 3 * h * g.num_shared_experts * g.moe_intermediate_size // tp
        else:
            led.layer += 3 * h * g.intermediate_size // tp
    return led
