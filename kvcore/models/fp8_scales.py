"""An fp8 checkpoint with ``weight_block_size`` [N, K] (DeepSeek-V3, Kimi-K2, Qwen3-Next-FP8):
the linears vLLM 0.33 quantises on one rank and their float32 block scales.

Every linear built with the model's ``quant_config`` is fp8 (Fp8LinearMethod): attention's
q/k/v/o (MLA's projections), the MLPs and shared experts, Gated DeltaNet's ``in_proj_qkvz``,
``in_proj_ba`` and ``out_proj``, Mamba2's ``in_proj`` and ``out_proj``. Not quantised: the
convolutions (built with ``quant_config=None``), Mamba1's whole mixer (Jamba: MambaMixer takes
no quant_config), embeddings, the LM head, norms and routers. Each quantised linear holds one
scale per N x K block of its shard, ``ceil(out / N) * ceil(in / K)``
(quantization/utils/fp8_utils.py create_fp8_scale_parameter; `weight_scale_inv`), the routed
experts one such grid each (Fp8MoEMethod, on a finer block where vLLM refines it:
`kvcore.models.fp8_shapes`).

A linear here is (vLLM's module name, its output partitions on the rank, its input width on
the rank, how it splits: "column", "row" or "replicated"), which `kvcore.models.fp8_shapes`
also checks against the block as vLLM's validate_fp8_block_shape does.
"""

from __future__ import annotations

from kvcore.models.geometry import ModelGeometry
from kvcore.models.rank_params import on_rank

Linear = tuple[str, tuple[int, ...], int, str]
# Models whose MoE router (a GateLinear) vLLM builds with the quant_config, under any method
# (qwen3_moe.py, lfm2_moe.py, k2_horizon.py; the others' take none, InternS1-Pro's too)
QUANTISED_GATES = ("qwen3_moe", "lfm2_moe", "qwen3_vl_moe_text", "k2_horizon")

# Qwen3-Next keeps in_proj_qkvz and in_proj_ba as one fused output each (gqa_interleaved_layout);
# Qwen3.5 splits them into q, k, v, z and b, a (qwen_gdn_linear_attn.py create_qkvz_proj)
_INTERLEAVED_GDN = ("qwen3_next",)


def block_grid(out: int, inp: int, block: tuple[int, int]) -> int:
    """The float32 scales of an `out` x `inp` shard: one per block, partial ones too."""
    return -(-out // block[0]) * -(-inp // block[1])


def attention_linears(g: ModelGeometry, tp: int) -> list[Linear]:
    h = g.hidden_size
    m = g.mla
    if m is not None:
        heads = g.num_attention_heads // tp
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        latent = m.kv_lora_rank + m.qk_rope_head_dim
        first: list[Linear]
        if m.q_lora_rank is None:
            first = [("q_proj", (heads * qk,), h, "column"),
                 ("kv_a_proj_with_mqa", (latent,), h, "replicated")]
        else:
            first = [("fused_qkv_a_proj", (m.q_lora_rank, latent), h, "replicated"),
                 ("q_b_proj", (heads * qk,), m.q_lora_rank, "column")]
        out = [*first, ("kv_b_proj", (heads * (m.qk_nope_head_dim + m.v_head_dim),),
                        m.kv_lora_rank, "column"),
               ("o_proj", (h,), heads * m.v_head_dim, "row")]
        if m.indexer is not None and m.q_lora_rank is not None:
            # (DeepSeek-V3.2's indexer: wq_b takes the quant_config, replicated;
            # wk_weights_proj is built without it)
            ix = m.indexer
            out.append(("indexer.wq_b", (ix.n_heads * ix.head_dim,), m.q_lora_rank,
                        "replicated"))
        return out
    q = g.num_attention_heads // tp * g.head_dim
    if g.model_type == "step3_text":
        # (Step3's MFA, step3_text.py: a replicated qkv_proj to the low-rank query and the one
        # KV head, o_proj, then wq lifting the query to the heads, in that order)
        return [("qkv_proj", (g.share_q_dim + 2 * g.head_dim,), h, "replicated"),
                ("o_proj", (h,), q, "row"), ("wq", (q,), g.share_q_dim, "column")]
    kv = on_rank(g.num_kv_heads, tp) * g.head_dim
    # (Qwen3-Next's output gate: the query's part twice as wide)
    out = [("qkv_proj", (q * (2 if g.attention_output_gate else 1), kv, kv), h, "column"),
           ("o_proj", (h,), q, "row")]
    if g.head_gate:     # (Step-3.5's head-wise gate, g_proj: one output a head)
        out.append(("g_proj", (g.num_attention_heads // tp,), h, "column"))
    elif g.head_gate_width:     # (Laguna's g_proj, built with the quant_config after o_proj)
        out.append(("g_proj", (g.num_attention_heads // tp * g.head_gate_width,), h, "column"))
    return out


def mlp_linears(g: ModelGeometry, width: int, tp: int, gated: bool = True) -> list[Linear]:
    """A gated MLP `width` wide (gate_up_proj, down_proj), or Nemotron-H's (up_proj, down_proj)."""
    w, h = width // tp, g.mlp_input_size or g.hidden_size     # (LFM2's block_dim)
    if gated and g.model_type == "laguna":
        # (laguna.py's LagunaMLP, its shared expert's too: gate_proj and up_proj two
        # ColumnParallelLinears, each shard checked against the block on its own)
        return [("gate_proj", (w,), h, "column"), ("up_proj", (w,), h, "column"),
                ("down_proj", (h,), w, "row")]
    up = ("gate_up_proj", (w, w), h, "column") if gated else ("up_proj", (w,), h, "column")
    return [up, ("down_proj", (h,), w, "row")]


def mixer_linears(g: ModelGeometry, tp: int) -> list[Linear]:
    """A Mamba2, Gated DeltaNet or short-convolution mixer's quantised linears (Mamba1's:
    none)."""
    m = g.mamba
    assert m is not None
    h = g.hidden_size
    if m.version == "gdn":
        qk, v, nh = m.n_groups * m.d_state // tp, m.n_heads * m.d_head // tp, m.n_heads // tp
        qkvz: tuple[int, ...]
        ba: tuple[int, ...]
        if g.model_type in _INTERLEAVED_GDN:
            qkvz, ba = (2 * qk + 2 * v,), (2 * nh,)
        else:
            qkvz, ba = (qk, qk, v, v), (nh, nh)
        return [("in_proj_qkvz", qkvz, h, "column"), ("in_proj_ba", ba, h, "column"),
                ("out_proj", (h,), v, "row")]
    if m.version == "short_conv":
        # (LFM2's ShortConv: in_proj B, C and x, each the conv's width; out_proj; the conv's
        # width in and out)
        w = m.d_inner // tp
        return [("in_proj", (w, w, w), m.d_inner, "column"),
                ("out_proj", (m.d_inner,), w, "row")]
    if m.version != "mamba2":
        return []
    di, nh = m.d_inner // tp, m.n_heads // tp
    gs = on_rank(m.n_groups, tp) * m.d_state
    # MambaMixer2: x, z, B, C, dt as five outputs when TP divides the groups, else one fused
    # output (the groups duplicated over the ranks)
    parts: tuple[int, ...] = (di, di, gs, gs, nh) if m.n_groups % tp == 0 else (
        2 * di + 2 * gs + nh,)
    return [("in_proj", parts, h, "column"), ("out_proj", (h,), di, "row")]


def scales(linears: list[Linear], block: tuple[int, int]) -> int:
    return sum(block_grid(sum(parts), inp, block) for _, parts, inp, _ in linears)


def attention_scales(g: ModelGeometry, tp: int, block: tuple[int, int]) -> int:
    return scales(attention_linears(g, tp), block)


def tensor_scales(linears: list[Linear], static: bool) -> int:
    """Per-tensor scales (no ``weight_block_size``): a float32 weight scale a shard of each
    linear, and with static inputs an input scale a shard (fp8.py create_weights)."""
    return sum(len(parts) for _, parts, _, _ in linears) * (2 if static else 1)


def rank_scales(g: ModelGeometry, linears: list[Linear]) -> int:
    """The float32 scales an fp8 checkpoint's `linears` hold on a rank: a grid a weight with
    ``weight_block_size``, else one a shard (two with static inputs)."""
    block = g.fp8_block
    return scales(linears, block) if block is not None else tensor_scales(linears, g.fp8_static)


def static_inputs(quant: object) -> bool:
    """Whether an fp8 ``quantization_config`` quantises inputs with static scales
    (``activation_scheme`` static: input scales held beside the weights')."""
    return isinstance(quant, dict) and quant.get("activation_scheme") == "static"


def block_of(quant: object) -> tuple[int, int] | None:
    """An fp8 ``quantization_config``'s ``weight_block_size`` (None: per-tensor scales,
    `tensor_scales`)."""
    size = quant.get("weight_block_size") if isinstance(quant, dict) else None
    if (isinstance(size, list) and len(size) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in size)):
        return size[0], size[1]
    return None


def ignored_of(quant: object) -> tuple[tuple[str, ...], str]:
    """The module names an fp8 config leaves unquantised and the key holding them:
    ``ignored_layers``, else ``modules_to_not_convert`` (Fp8Config.from_config)."""
    if not isinstance(quant, dict):
        return (), "ignored_layers"
    key = "ignored_layers" if quant.get("ignored_layers") else "modules_to_not_convert"
    names = quant.get(key)
    return (tuple(n for n in names if isinstance(n, str)) if isinstance(names, list) else (),
            key)
