"""One tensor-parallel rank's parameters, a decoder layer's part at a time, as vLLM 0.33's
modules shard them (checked tensor by tensor on the meta device: tests/data/weights_census/).

What a rank holds: the projections split by TP (column- and row-parallel linears), except
MLA's q_a/kv_a projections (replicated) and KV heads or Mamba2 groups fewer than the ranks
(each rank keeps one: QKVParallelLinear, MambaMixer2's duplicated groups); whole on every
rank: the RMSNorms (q/k norms and Gated DeltaNet's gated norm included; Mamba2's gated norm
is split), the MoE routers and their biases, a row-parallel linear's bias (gpt-oss's o_proj,
its experts' down-projection bias) and the shared-expert gates (Qwen3-Next's, Qwen3.5's,
Qwen2-MoE's).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvcore.models.geometry import ModelGeometry
from kvcore.models.mla import mla_attention_params, mla_replicated_params
from kvcore.models.qwen3_5 import GDN_TYPES

# MoE blocks gating their shared expert (a replicated hidden x 1 linear): qwen2_moe.py,
# qwen3_next.py, qwen3_5.py
SHARED_GATE_TYPES = (*GDN_TYPES, "qwen2_moe")
# Model types whose o_proj (row-parallel: its bias whole on every rank) is biased where
# ``attention_bias`` is: llama.py's bias_o_proj (Mistral's, Phi-3's, ERNIE-4.5's, InternLM3's
# classes are its; Aria's and Phi-4-MM's text layers too), gemma2/3/3n/4.py, granite.py,
# granitemoehybrid.py, exaone4.py, exaone_moe.py, hyperclovax.py, nemotron.py, apertus.py,
# laguna.py, and transformers' SmolLM3, HunYuan, OLMo 2 / 3, FlexOLMo, Jais2, Arcee, Mellum,
# VaultGemma (Transformers backend); Qwen2's QKV bias leaves o_proj unbiased. gpt-oss's o_proj
# is always biased. Found by tests/data/size_fuzz (attention_bias drawn true)
O_BIAS_TYPES = frozenset({
    "llama", "mistral", "ministral3", "phi3", "ernie4_5", "gemma2", "gemma3", "gemma3_text",
    "gemma3n", "gemma3n_text", "gemma4", "gemma4_text", "granite", "granite_swa",
    "granitemoehybrid", "exaone4", "exaone_moe", "hyperclovax", "nemotron", "apertus", "laguna",
    "smollm3", "gpt_oss", "hunyuan_v1_dense", "hunyuan_v1_moe", "olmo2", "olmo3",
    "flex_olmo", "jais2", "arcee", "phimoe", "mellum", "vaultgemma", "aria_text", "phi4mm"})
# Model types whose attention is unbiased whatever ``attention_bias`` says (falcon_h1.py:261-268;
# granitemoe.py's GraniteMoeAttention, Granite-MoE-Shared's and Granite-MoE-SWA's too;
# nemotron_h.py's; commandr.py's and cohere2_moe.py's; transformers' Cwm's; gemma.py's, PaliGemma's
# text model; llama4.py's decoder layer passes bias=False, bias_o_proj=False; hy_v3.py's;
# internlm2.py's wqkv and wo, whatever InternLM2Config's ``bias`` or attention_bias say)
UNBIASED_ATTENTION_TYPES = frozenset({"falcon_h1", "granitemoe", "granitemoeshared",
                                      "granitemoe_swa", "nemotron_h", "cohere", "cohere2",
                                      "cohere2_moe", "olmoe", "cwm", "gemma", "llama4_text",
                                      "hy_v3", "internlm2", "cosmos3_edge_text"})
# Model types whose gated dense MLP is biased where ``mlp_bias`` is (llama.py:305 and its kin,
# granite.py (Granite SWA's too), exaone4.py, solar.py, transformers' SmolLM3): gate_up's bias
# split over the ranks, down_proj's whole
MLP_BIAS_TYPES = frozenset({"llama", "mistral", "ministral3", "ernie4_5", "granite", "smollm3",
                            "exaone4", "solar", "granite_swa", "nemotron", "jais2", "arcee",
                            "apertus", "cwm", "hyperclovax", "seed_oss",
                            "cosmos3_edge_text"})
# Model types whose dense MLP is up and down only, no gate (nemotron.py's NemotronMLP,
# transformers' Jais2MLP and ArceeMLP on the Transformers backend: squared ReLU; apertus.py's,
# its XIELU activation two learned scalars, alpha_p and alpha_n); and whose norms are
# LayerNorms with a bias (NemotronLayerNorm1P, Jais2's nn.LayerNorm), the final one too
# (and Cosmos3-Edge's text model: cosmos3_edge.py builds it as Nemotron-H attention and MLP
# layers, NemotronHMLP's up and down biased by mlp_bias, its attention unbiased)
UNGATED_MLP_TYPES = ("nemotron", "jais2", "arcee", "apertus", "cosmos3_edge_text")
LAYER_NORM_BIAS_TYPES = ("nemotron", "jais2", "phimoe")     # (and phimoe.py's nn.LayerNorm)
# ... and whose norms hold no parameter at all (transformers' OLMo: a LayerNorm without affine)
NO_NORM_WEIGHT_TYPES = ("olmo",)
# Model types whose LM head has a bias, split with its rows (phimoe.py's ParallelLMHead)
HEAD_BIAS_TYPES = ("phimoe",)


def dense_mlp(g: ModelGeometry, tp: int, led: Ledger) -> None:
    """A gated dense MLP (gate_up and down projections; up and down for `UNGATED_MLP_TYPES`)
    and its biases where it has them."""
    ins = 2 if g.model_type in UNGATED_MLP_TYPES else 3     # (up and down; gate, up, down)
    led.layer += ins * (g.mlp_input_size or g.hidden_size) * g.intermediate_size // tp
    if g.mlp_bias and g.model_type in MLP_BIAS_TYPES:
        led.model += (ins - 1) * g.intermediate_size // tp + g.hidden_size
    if g.model_type == "apertus":
        # (XIELU's alpha_p, alpha_n: activation.py's XIELU makes them bfloat16 whatever the
        # model dtype, 2 B each under --dtype float32 too: tests/data/weights_census/unread_keys)
        led.bf16 += 2

# Model types whose MoE router is float32 whatever the model dtype, with a float32
# e_score_correction_bias (one a routed expert): GLM-4.5's Glm4MoE builds its GateLinear with
# params_dtype float32 (glm4_moe.py:141-150); GLM-4.5-Air's 45 routers are 94,394,880 B
# (GLM-4.7-Flash's Glm4MoeLite and GLM-4.5V's text model, built as Glm4MoeForCausalLM: Glm4MoE's;
# ERNIE-4.5's and ERNIE-4.5-VL's text experts': ernie45_moe.py, ernie45_vl_moe.py; AFMoE's
# router and expert_bias: afmoe.py:86-95; HY-V3's: hy_v3.py:157-177)
FP32_ROUTERS = ("glm4_moe", "glm4_moe_lite", "glm4v_moe_text", "ernie4_5_moe", "ernie4_5_moe_vl",
                "minimax_m2", "afmoe", "hy_v3", "beam")   # (Beam's: beam/nvidia/moe.py)
# (of those, MiniMax-M2's score bias is there only where use_routing_bias: minimax_m2.py:85)
BIAS_WHERE_ASKED = ("minimax_m2",)
# Model types whose router keeps a float32 e_score_correction_bias whatever the config says,
# the router itself in the model dtype (exaone_moe.py:95)
SCORE_BIAS_TYPES = ("exaone_moe",)
# Model types whose q/k norms span all of a rank's query and KV heads, one weight a channel
# (Command R+'s LayerNorms; MiniMax-M2's MiniMaxText01RMSNormTP, minimax_m2.py:215-231)
WIDE_QK_NORM_TYPES = ("cohere", "minimax_m2")
# ... and whole on every rank: transformers' OLMo 2 / 3 and FlexOLMo on vLLM's Transformers
# backend, which splits the projections, not the norms (modeling_olmo3.py:161-162)
WHOLE_QK_NORM_TYPES = ("olmo2", "olmo3", "flex_olmo", "olmoe")   # (olmoe.py's are whole too)
# vLLM's ParallelLMHead and VocabParallelEmbedding pad the vocabulary to a multiple of 64
# (vocab_parallel_embedding.py DEFAULT_VOCAB_PADDING_SIZE), then split the rows by TP
VOCAB_PAD = 64
# gpt-oss's MXFP4 experts on an H100: OAI's Triton kernels (FlashInfer's TRT-LLM ones are
# SM100's), which pad each rank's intermediate size to a multiple of 64
# (fused_moe/oracle/mxfp4.py mxfp4_round_up_hidden_size_and_intermediate_size); a weight is
# 4 bits, plus one 8-bit scale per 32 values
MXFP4_PAD = 64


@dataclass(slots=True)
class Ledger:
    """A rank's parameters by how they are stored."""
    model: int = 0      # in the model dtype: embeddings, norms, biases, small vectors
    layer: int = 0      # the decoder layers' matrices: 1 byte each in an fp8 checkpoint
    fp32: int = 0       # float32 whatever the model dtype (routers, Mamba's A, score biases)
    int32: int = 0      # int32 tables (DeepSeek-V4's hash routing, tid2eid)
    bf16: int = 0       # bfloat16 whatever the model dtype (Apertus' XIELU alpha_p, alpha_n)
    mx_bytes: int = 0   # MXFP4 experts as stored (packed weights and their scales)
    mx_params: int = 0  # the same experts' logical parameters (the clock's weight stream)


def on_rank(n: int, tp: int) -> int:
    """Heads (or Mamba2 groups) a rank keeps: its share, or one when there are fewer than
    ranks (vLLM replicates them; it refuses counts that neither divide nor are divided)."""
    return n // tp if n >= tp else 1


def shared_width(g: ModelGeometry) -> int:
    """The shared experts' one MLP width (`ModelGeometry.shared_expert_width`, Llama 4's its
    routed experts'; else DeepSeek's n_shared_experts of moe_intermediate_size)."""
    return g.shared_expert_width or g.num_shared_experts * g.moe_intermediate_size


def vocab_rows(g: ModelGeometry, tp: int) -> int:
    return -(-g.vocab_size // VOCAB_PAD) * VOCAB_PAD // tp


def lm_head(g: ModelGeometry, tp: int) -> int:
    """The LM head's parameters a rank: the padded vocabulary's rows split x the hidden width,
    a bias where `HEAD_BIAS_TYPES`; Isaac's from its top-level config (`head_vocab`,
    `head_width`)."""
    if g.head_width or g.head_vocab:
        rows = -(-(g.head_vocab or g.vocab_size) // VOCAB_PAD) * VOCAB_PAD // tp
        return rows * (g.head_width or g.hidden_size)
    rows = vocab_rows(g, tp)
    return rows * g.hidden_size + (rows if g.model_type in HEAD_BIAS_TYPES else 0)


def final_norm(g: ModelGeometry) -> int:
    """The final norm's parameters (a LayerNorm's bias too: `LAYER_NORM_BIAS_TYPES`)."""
    if g.model_type in NO_NORM_WEIGHT_TYPES:
        return 0
    return g.hidden_size * (2 if g.model_type in LAYER_NORM_BIAS_TYPES else 1)


def layer_norms(g: ModelGeometry) -> int:
    """A decoder layer's norms outside its mixer: Gemma 2/3 and GLM-4 (glm4.py's
    Glm4DecoderLayer, GLM-4.1V's and GLM-OCR's text models too), transformers' Kolibri1 (on the
    Transformers backend) and openPangu's sandwich norms four (pre and post attention and
    feed-forward),
    Cohere's one (commandr.py, cohere2_moe.py: attention and MLP in parallel), the rest two."""
    if g.model_type in ("gemma2", "gemma3", "gemma3_text", "glm4", "glm4v_text",
                        "glm_ocr_text", "kolibri1") or (
            g.sandwich_norms):
        return 4 * g.hidden_size
    if g.model_type in ("cohere", "cohere2", "cohere2_moe"):
        return g.hidden_size
    return 2 * final_norm(g)


def attention(g: ModelGeometry, tp: int, led: Ledger) -> None:
    h = g.hidden_size
    if g.mla is not None:
        m = g.mla
        norms = (m.q_lora_rank or 0) + m.kv_lora_rank   # q_a_layernorm, kv_a_layernorm
        whole = mla_replicated_params(m, h)
        split = mla_attention_params(m, h, g.num_attention_heads) - whole - norms
        if m.indexer is not None and m.q_lora_rank is not None:
            # (replicated on every rank; its k_norm, a LayerNorm, made float32; wk and
            # weights_proj, one linear built without the quant_config: the model dtype)
            ix = m.indexer
            unquantised = ix.params(h, 0) - ix.norm_params
            whole += ix.params(h, m.q_lora_rank) - ix.norm_params - unquantised
            led.model += unquantised
            led.fp32 += ix.norm_params
        led.layer += whole + split // tp
        led.model += norms
        return
    q = g.num_attention_heads // tp * g.head_dim
    kv = on_rank(g.num_kv_heads, tp) * g.head_dim
    # (Qwen3-Next's output gate: the QKV projection's second query-sized output)
    led.layer += h * (q * (2 if g.attention_output_gate else 1) + 2 * kv) + q * h
    if g.attention_bias and g.model_type not in UNBIASED_ATTENTION_TYPES:
        led.model += q + 2 * kv + (h if g.model_type in O_BIAS_TYPES else 0)
    if g.attention_out_bias:    # (Seed-OSS's attention_out_bias: o_proj's, whole on a rank)
        led.model += h
    # (Laguna's g_proj: column-parallel, a gate a query head or a head's channel)
    led.layer += h * g.num_attention_heads // tp * g.head_gate_width
    if g.model_type in ("gpt_oss", "beam") or g.attention_sinks:
        # sinks: one learned logit per head, no KV (Beam's: its output gate's bias a head)
        led.model += g.num_attention_heads // tp
    if g.qk_norm:
        # (Command R+'s LayerNorms hold a weight a head: the rank's query and KV heads)
        whole = (g.num_attention_heads + g.num_kv_heads) * g.head_dim
        led.model += (q + kv if g.model_type in WIDE_QK_NORM_TYPES
                      else whole if g.model_type in WHOLE_QK_NORM_TYPES
                      else g.qk_norm_width or 2 * g.head_dim)


def mamba(g: ModelGeometry, tp: int, led: Ledger) -> None:
    m = g.mamba
    assert m is not None
    h = g.hidden_size
    if m.version == "gdn":
        # Gated DeltaNet: q, k (key heads) and v, z (value heads) projected from the hidden
        # state, a beta and a decay a value head, the conv over q, k, v, per-head A (float32)
        # and dt bias, the gated norm (one head wide, whole), the output projection
        # (the projections split their widths, not their heads: 2 key heads of 16 at TP 4
        # are 8 wide a rank, as vLLM builds them with --mm-encoder-tp-mode data's tiny case)
        qk, v, nh = m.n_groups * m.d_state // tp, m.n_heads * m.d_head // tp, m.n_heads // tp
        led.layer += h * (2 * qk + 2 * v) + h * 2 * nh + v * h
        led.fp32 += nh
        # (the conv is built without the quant_config: never fp8)
        led.model += nh + m.d_head + (2 * qk + v) * m.d_conv
        return
    di = m.d_inner // tp
    if m.version == "short_conv":
        # LFM2: in_proj (B, C, x), out_proj, the conv (built without the quant_config);
        # their biases with conv_bias (out_proj's whole on every rank); the projections are
        # the conv's width in and out, not the hidden size's (short_conv.py: `dim`)
        led.layer += m.d_inner * 3 * di + di * m.d_inner
        led.model += di * m.d_conv + (4 * di + m.d_inner if m.conv_bias else 0)
        return
    if m.version == "mamba1":
        # in, conv (+ bias), x, dt (+ bias) and out projections, A (float32), D;
        # Jamba's dt, B and C layernorms (whole)
        # (vLLM's MambaMixer takes no quant_config: an fp8 checkpoint's Mamba1 layers are not
        # quantised, so all of it is in the model dtype)
        led.model += (h * 2 * di + di * m.d_conv + di * (m.dt_rank + 2 * m.d_state)
                      + m.dt_rank * di + di * h)
        # (FalconMamba's B, C and dt norms have no weight; Mamba's none at all)
        led.model += 3 * di + (m.dt_rank + 2 * m.d_state if g.model_type == "jamba" else 0)
        led.fp32 += di * m.d_state      # (MambaMixer makes A float32 whatever the model's)
        return
    nh = m.n_heads // tp
    conv = di + 2 * on_rank(m.n_groups, tp) * m.d_state
    # in_proj (x, z, B, C, dt), conv (+ bias), A (float32), D, dt bias, the gated norm, out
    led.layer += h * (di + conv + nh) + di * h
    led.model += conv * m.d_conv + conv + 2 * nh + (di if m.gated_norm else 0)  # (conv: not fp8)
    led.fp32 += nh


def nemotron_mlp(g: ModelGeometry, tp: int, moe: bool, shared: int, led: Ledger) -> None:
    """Nemotron-H's feed-forward layer: squared ReLU, up and down, no gate; dense (biased
    where ``mlp_bias``) or experts (with the router whole on every rank; the shared experts
    unbiased)."""
    h = g.hidden_size
    if moe:
        led.layer += g.num_experts * 2 * h * g.moe_intermediate_size // tp + 2 * h * shared // tp
        led.model += g.num_experts * h
    else:
        led.layer += 2 * h * g.intermediate_size // tp
        if g.mlp_bias:  # (nemotron_h.py's dense MLP: up's bias split, down's whole)
            led.model += g.intermediate_size // tp + h


def moe(g: ModelGeometry, tp: int, shared: int, led: Ledger) -> None:
    h, e = g.hidden_size, g.num_experts
    led.layer += 3 * h * shared // tp
    if shared and g.mlp_bias and g.model_type == "aria_text":
        # (Aria's shared experts, a LlamaMLP reading mlp_bias: gate_up's split, down's whole)
        led.model += 2 * shared // tp + h
    if g.model_type in SHARED_GATE_TYPES:
        # Qwen3-Next's (Qwen3.5's, Qwen2-MoE's) shared_expert_gate, hidden x 1: built whatever
        # the shared expert's width, none included (qwen2_moe.py:148-154, qwen3_next.py:197-203)
        led.model += h
    router = h * e
    if g.model_type in FP32_ROUTERS:
        led.fp32 += router
    else:
        led.model += router
    if g.model_type in FP32_ROUTERS and g.model_type not in BIAS_WHERE_ASKED \
            or g.router_score_bias or g.model_type in SCORE_BIAS_TYPES:
        led.fp32 += e   # e_score_correction_bias
    inter = g.moe_intermediate_size // tp
    if g.quantization == "mxfp4":
        inter = -(-inter // MXFP4_PAD) * MXFP4_PAD
        values = e * 3 * inter * h
        led.mx_bytes += values // 2 + values // 32
        led.mx_params += e * 3 * h * g.moe_intermediate_size // tp
    else:
        led.layer += e * 3 * h * g.moe_intermediate_size // tp
    if g.model_type == "gpt_oss":
        # its experts' biases (bfloat16; gate/up split, down whole) and the router's bias
        led.model += e * 2 * inter + e * h + e
