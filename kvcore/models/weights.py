"""An estimate of the weight bytes from a model's config (used when --weights-gib is not given).

Parameters counted: embeddings (and an untied LM head), per attention layer q/k/v/o (+ biases
when the config has them, + one sink per head for gpt-oss), per Mamba layer the in/out
projections, conv and SSM parameters, per layer a dense gated MLP (3 * hidden * intermediate)
or a MoE block (experts * 3 * hidden * moe_intermediate + router, + the shared experts: DeepSeek's
n_shared_experts, or the one MLP width Qwen2-MoE, Qwen3-Next, Granite 4.0-H and Nemotron-H name;
Qwen3-Next's attention output gate), and the norms (Qwen3-Next's and GLM-4.5's q/k norms too); an
MLA layer (DeepSeek, Kimi-K2) its latent projections (`kvcore.models.mla`).
Bytes: the model dtype, except GLM-4.5's float32 routers, MXFP4-quantised experts (gpt-oss: 4 bits plus one 8-bit scale per
32 values = 4.25 bits) and fp8 checkpoints (``quant_method`` fp8: every decoder layer's matrices
at 1 byte, embeddings and norms in the model dtype; the block scales, 1/16,384 of them, left
out). Vision towers of multimodal checkpoints are counted for Qwen3.5 (vLLM builds and loads
it: `kvcore.models.qwen3_5.vision_tower_params`, on the first pipeline stage, split by TP as
the rest), not for the other models. It is an estimate (within
a few per cent for the presets); vLLM measures the real figure, so pass --weights-gib to match a
real deployment.
"""

from __future__ import annotations

from kvcore.models.geometry import ModelGeometry
from kvcore.models.mla import mla_attention_params, mla_replicated_params
from kvcore.models.qwen3_5 import GDN_TYPES
from kvcore.specs import DTYPE_BYTES

MXFP4_BYTES_PER_PARAM = 4.25 / 8
# Model types whose MoE router is float32 whatever the model dtype, with a float32
# e_score_correction_bias (one a routed expert): GLM-4.5's Glm4MoE builds its GateLinear with
# params_dtype float32 (glm4_moe.py:141-150); GLM-4.5-Air's 45 routers are 94,394,880 B
FP32_ROUTERS = ("glm4_moe",)

# A pipeline stage: its decoder layers (None: all), whether it is the first and the last stage
Stage = tuple[range | None, bool, bool]
WHOLE: Stage = (None, True, True)


def _attention_params(g: ModelGeometry) -> int:
    if g.mla is not None:
        return mla_attention_params(g.mla, g.hidden_size, g.num_attention_heads)
    q = g.num_attention_heads * g.head_dim
    kv = g.num_kv_heads * g.head_dim
    p = g.hidden_size * (q + 2 * kv) + q * g.hidden_size
    if g.attention_output_gate:
        p += g.hidden_size * q  # the QKV projection's second query-sized output
    if g.attention_bias:
        p += q + 2 * kv + (g.hidden_size if g.model_type == "gpt_oss" else 0)
    if g.model_type == "gpt_oss":
        p += g.num_attention_heads  # attention sinks: one learned logit per head, no KV
    return p


def _mamba_params(g: ModelGeometry) -> int:
    m = g.mamba
    assert m is not None        # (`mamba_layer_params` asks only of a Mamba model)
    h, di = g.hidden_size, m.d_inner
    if m.version == "gdn":
        # Gated DeltaNet: q, k (key heads) and v, z (value heads) projected from the hidden
        # state, a beta and a decay a value head, the conv over q, k, v, per-head A and dt
        # bias, the gated norm, the output projection
        qk, v = m.n_groups * m.d_state, m.n_heads * m.d_head
        return (h * (2 * qk + 2 * v) + h * 2 * m.n_heads + (2 * qk + v) * m.d_conv
                + 2 * m.n_heads + m.d_head + v * h)
    if m.version == "mamba1":
        return (h * 2 * di + di * m.d_conv + di + di * (m.dt_rank + 2 * m.d_state)
                + m.dt_rank * di + di + di * m.d_state + di + di * h)
    conv_dim = di + 2 * m.n_groups * m.d_state
    return (h * (2 * di + 2 * m.n_groups * m.d_state + m.n_heads) + conv_dim * m.d_conv
            + conv_dim + 3 * m.n_heads + di + di * h)


def _param_split(g: ModelGeometry, stage: Stage = WHOLE) -> tuple[int, int, int]:
    """(embeddings and norms, the decoder layers' matrices, MXFP4 experts), in parameters, of
    the whole model or of one pipeline `stage`: its layers; the embedding on the first stage,
    the LM head and the final norm on the last (a tied head: the embedding there again, as
    vLLM builds it on the last rank)."""
    layer_range, first, last = stage
    vh = g.vocab_size * g.hidden_size
    if first and last:
        dense = vh * (1 if g.tie_word_embeddings else 2) + g.hidden_size
    else:
        dense = (vh if first else 0) + (vh + g.hidden_size if last else 0)
    if first:
        dense += g.vision_params    # (with the embedding: what runs before the first layer)
    quant = 0
    layers = 0
    # the shared experts: one MLP this wide (`ModelGeometry.shared_expert_width`)
    shared = g.shared_expert_width or g.num_shared_experts * g.moe_intermediate_size
    # Qwen3-Next's MoE (and Qwen3.5's) gates its shared expert
    shared_gate = g.hidden_size if g.model_type in GDN_TYPES and shared else 0
    for i, kind in enumerate(g.layer_kinds):
        if layer_range is not None and i not in layer_range:
            continue
        moe = g.moe_layers[i] if i < len(g.moe_layers) else False
        if g.model_type == "nemotron_h":
            # one block a layer, one norm: a mixer, or a squared-ReLU feed-forward (up and
            # down, no gate), dense or experts
            dense += g.hidden_size
            if kind == "mamba":
                layers += _mamba_params(g)
            elif kind != "mlp":
                layers += _attention_params(g)
            elif moe:
                layers += g.num_experts * (2 * g.hidden_size * g.moe_intermediate_size
                                           + g.hidden_size) + 2 * g.hidden_size * shared
            else:
                layers += 2 * g.hidden_size * g.intermediate_size
            continue
        layers += _mamba_params(g) if kind == "mamba" else _attention_params(g)
        if kind == "parallel":
            layers += _mamba_params(g)  # Falcon-H1: a Mamba2 mixer beside the attention
        dense += 2 * g.hidden_size  # the layer's norms
        if g.qk_norm and kind != "mamba":
            dense += 2 * g.head_dim     # q_norm, k_norm (head_dim each)
        if moe:
            experts = g.num_experts * 3 * g.hidden_size * g.moe_intermediate_size
            layers += _router_size(g) + 3 * g.hidden_size * shared
            # (its shared_expert_gate, hidden x 1: with the q/k norms, vLLM's own count of
            # Qwen3-Next's 80B, exactly: tests/data/mtp_draft/qwen3_next_answers.json)
            dense += shared_gate
            if g.quantization == "mxfp4":
                quant += experts
            else:
                layers += experts
        elif g.intermediate_size:
            layers += 3 * g.hidden_size * g.intermediate_size
    return dense, layers, quant


def estimate_params(g: ModelGeometry) -> tuple[int, int]:
    """(parameters not in MXFP4, parameters in MXFP4)."""
    dense, layers, quant = _param_split(g)
    return dense + layers, quant


def estimate_weights_bytes(g: ModelGeometry, tp: int = 1, stage: Stage = WHOLE) -> int:
    """Weight bytes on one tensor-parallel worker (of one pipeline `stage`): the total split
    evenly, except an MLA layer's down-projections and the MoE routers, which every worker
    holds whole."""
    dense, layers, quant = _param_split(g, stage)
    layer_bytes = 1 if g.quantization == "fp8" else DTYPE_BYTES[g.dtype]
    in_stage = range(g.num_layers) if stage[0] is None else stage[0]
    # vLLM builds q_a/kv_a (fused_qkv_a_proj) with disable_tp, or kv_a as a ReplicatedLinear:
    # split by TP they were 0.75 GiB a rank short for DeepSeek-V3 at TP 8
    n_mla = sum(1 for i in in_stage if g.layer_kinds[i] == "mla")
    whole = n_mla * mla_replicated_params(g.mla, g.hidden_size) if g.mla else 0
    # the MoE router is a GateLinear (a ReplicatedLinear, no quantisation): whole on every
    # rank, in the model dtype (DeepSeek-V3 at TP 8: 0.19 GiB a rank more than split), or in
    # float32 (`FP32_ROUTERS`)
    router = _router_params(g, in_stage)
    router_bytes = 4 if g.model_type in FP32_ROUTERS else DTYPE_BYTES[g.dtype]
    total = (dense * DTYPE_BYTES[g.dtype] + (layers - whole - router) * layer_bytes
             + int(quant * MXFP4_BYTES_PER_PARAM))
    return total // tp + whole * layer_bytes + router * router_bytes


def _router_size(g: ModelGeometry) -> int:
    """One MoE layer's router: hidden x experts (+ GLM-4.5's correction bias, one an expert)."""
    bias = g.num_experts if g.model_type in FP32_ROUTERS else 0
    return g.hidden_size * g.num_experts + bias


def _router_params(g: ModelGeometry, in_stage: range) -> int:
    """The MoE layers' routers (`_router_size` each), as `_param_split` counts them."""
    n = 0
    for i, kind in enumerate(g.layer_kinds):
        if i in in_stage and i < len(g.moe_layers) and g.moe_layers[i] and (
                g.model_type != "nemotron_h" or kind == "mlp"):
            n += 1
    return n * _router_size(g)


def mamba_layer_params(g: ModelGeometry) -> int:
    """Parameters of one Mamba layer (projections, conv, SSM): the clock's weight stream."""
    return _mamba_params(g) if g.mamba is not None else 0
