"""The float32 block scales of an fp8 checkpoint with ``weight_block_size`` [N, K] (DeepSeek-V3,
Kimi-K2): vLLM's Fp8LinearMethod and its MoE method give every quantised linear of a rank one
scale per N x K block of its shard, ``ceil(out / N) * ceil(in / K)``
(quantization/utils/fp8_utils.py create_fp8_scale_parameter; `weight_scale_inv`), the
experts one such grid each. Embeddings, the LM head, norms and routers are not quantised.
"""

from __future__ import annotations

from kvcore.models.geometry import ModelGeometry
from kvcore.models.rank_params import on_rank


def _grid(out: int, inp: int, block: tuple[int, int]) -> int:
    return -(-out // block[0]) * -(-inp // block[1])


def attention_scales(g: ModelGeometry, tp: int, block: tuple[int, int]) -> int:
    h = g.hidden_size
    m = g.mla
    if m is not None:
        heads = g.num_attention_heads // tp
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        latent = m.kv_lora_rank + m.qk_rope_head_dim
        if m.q_lora_rank is None:          # q_proj; kv_a_proj_with_mqa (replicated)
            q = _grid(heads * qk, h, block) + _grid(latent, h, block)
        else:                              # fused_qkv_a_proj (replicated), q_b_proj
            q = _grid(m.q_lora_rank + latent, h, block) + _grid(heads * qk, m.q_lora_rank, block)
        return (q + _grid(heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank, block)
                + _grid(h, heads * m.v_head_dim, block))
    q = g.num_attention_heads // tp * g.head_dim
    kv = on_rank(g.num_kv_heads, tp) * g.head_dim
    return (_grid(q * (2 if g.attention_output_gate else 1) + 2 * kv, h, block)
            + _grid(h, q, block))


def mlp_scales(g: ModelGeometry, width: int, tp: int, block: tuple[int, int]) -> int:
    """A gated MLP `width` wide (gate_up_proj, down_proj) on one rank."""
    return _grid(2 * (width // tp), g.hidden_size, block) + _grid(g.hidden_size, width // tp, block)


def block_of(quant: object) -> tuple[int, int] | None:
    """An fp8 ``quantization_config``'s ``weight_block_size`` (None: per-tensor scales, a few
    numbers a layer, not counted)."""
    size = quant.get("weight_block_size") if isinstance(quant, dict) else None
    if (isinstance(size, list) and len(size) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in size)):
        return size[0], size[1]
    return None
