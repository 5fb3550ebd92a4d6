"""An estimate of the weight bytes from a model's config (used when --weights-gib is not given).

Parameters counted, per tensor-parallel rank as vLLM 0.33 builds them (`kvcore.models.
rank_params`; every preset and typed-in config checked tensor by tensor against vLLM's own
model classes on the meta device, at TP 1, 2, 4 and 8: tests/data/weights_census/):
embeddings (and an untied LM head; the vocabulary padded to a multiple of 64), per attention
layer q/k/v/o (+ biases when the config has them, + one sink per head for gpt-oss, + q/k norms
where the model has them), per Mamba layer the in/out projections, conv and SSM parameters,
per layer a dense gated MLP (3 * hidden * intermediate) or a MoE block (experts * 3 * hidden *
moe_intermediate + router, + the shared experts: DeepSeek's n_shared_experts, or the one MLP
width Qwen2-MoE, Qwen3-Next, Granite 4.0-H and Nemotron-H name; Qwen3-Next's attention output
gate), and the norms; an MLA layer (DeepSeek, Kimi-K2) its latent projections
(`kvcore.models.mla`); Gemma 3n and Gemma 4 their own (`kvcore.models.gemma_weights`), as
DeepSeek-V4 (`kvcore.models.deepseek_v4_weights`: its int32 hash-routing tables too).
Bytes: the model dtype, except float32 tensors (GLM-4.5's routers, DeepSeek-V3's and GLM's
e_score_correction_bias, Mamba's A), MXFP4-quantised experts (gpt-oss: 4 bits plus one 8-bit
scale per 32 values, each rank's width padded as H100's kernels pad it) and fp8 checkpoints
(``quant_method`` fp8: the linears vLLM quantises at 1 byte with a float32 scale per weight
block, or per shard without ``weight_block_size``, `kvcore.models.fp8_scales`, except those
its ignored_layers name, `kvcore.models.fp8_ignored`; the convolutions, Jamba's Mamba1 mixers,
embeddings and norms in the model dtype; four q/k/v/prob scales an attention layer, MLA's,
Jamba's and LFM2's aside). Vision
towers of multimodal checkpoints are counted for Qwen3.5 and Gemma 3 (vLLM builds and loads them:
`kvcore.models.qwen3_5.vision_tower_params`, `kvcore.models.siglip`, with Gemma 3's projector), on
the first pipeline stage, their embeddings, norms and row-parallel biases whole on every TP rank,
an fp8 checkpoint's tower linears fp8 with block scales (`kvcore.models.fp8_vision`); not for the
other models. AWQ, GPTQ and compressed-tensors checkpoints: their packed linears and experts as
vLLM holds them (`kvcore.models.int_quant`, `kvcore.models.ct_quant`); other methods' weights are
counted in the model dtype (`kvcore.models.int_quant_rank.unmodelled_note` says so). The clock's
weight stream leaves them out (a decode step runs no vision tower: `kvcore.clock.work` counts the
decoder's layers). Buffers (RoPE caches, attention scales) are not counted here
(`kvcore.models.buffers` estimates them; docs/config.md, "Buffers").
vLLM measures the real figure, so pass --weights-gib to match a real deployment.
"""

from __future__ import annotations

from kvcore.errors import InputError
from kvcore.models import (
    classic_weights,
    ernie45_vl_quant,
    fp8_scales,
    fp8_shapes,
    fp8_vision,
    int_quant_rank,
    modelopt_rank,
    tower_modelopt,
)
from kvcore.models import rank_params as rp
from kvcore.models.deepseek_ocr_tower import stage_kept
from kvcore.models.deepseek_v4_weights import v4_ledger
from kvcore.models.domyn_edge import domyn_ledger
from kvcore.models.dory_weights import dory_ledger
from kvcore.models.ernie45 import vision_experts_layer
from kvcore.models.fp8_ignored import layer_skips
from kvcore.models.gemma_weights import gemma_rank_params
from kvcore.models.geometry import ModelGeometry
from kvcore.models.interns1_pro import fope_rank_params
from kvcore.models.iquest_loop import decoder, gate_params
from kvcore.models.kimi_linear import KIMI_LINEAR
from kvcore.models.kimi_linear_weights import kimi_linear_ledger
from kvcore.models.kv_cache_quant import NO_QUANT_ATTENTION
from kvcore.models.longcat import LONGCAT, longcat_ledger
from kvcore.models.longcat_ngram import ngram_rank_params
from kvcore.models.mamba_only import MAMBA_ONLY_TYPES
from kvcore.models.mimo_v2 import MIMO_V2_TYPES, mimo_ledger
from kvcore.models.nemotron_nas_weights import nas_ledger
from kvcore.models.pangu_v2 import pangu_v2_ledger
from kvcore.models.rank_params import FP32_ROUTERS, Ledger
from kvcore.models.rnj1 import RNJ1
from kvcore.models.sparse_mla import layer_geometry
from kvcore.models.step3 import STEP3_TEXT, step3_ledger
from kvcore.models.step3p5 import STEP3P5, step3p5_ledger
from kvcore.models.zamba2_weights import zamba2_ledger
from kvcore.specs import DTYPE_BYTES

__all__ = ["FP32_ROUTERS", "WHOLE", "Stage", "estimate_params", "estimate_weights_bytes",
           "mamba_layer_params"]

# A pipeline stage: its decoder layers (None: all), whether it is the first and the last stage
Stage = tuple[range | None, bool, bool]
WHOLE: Stage = (None, True, True)


def _ledger(g: ModelGeometry, tp: int = 1, stage: Stage = WHOLE) -> Ledger:
    """One TP rank's parameters, of the whole model or of one pipeline `stage`: its layers;
    the embedding on the first stage, the LM head and the final norm on the last (a tied
    head: the embedding there again, as vLLM builds it on the last rank)."""
    staged = stage != WHOLE and g.gemma is not None
    if g.weights_unmodelled or staged:
        # (sized as a plain decoder they would be a quiet lie: refused, the measure asked for)
        why = g.weights_unmodelled or "Gemma's per-layer embeddings on pipeline stages"
        raise InputError(f"{g.name}: kvcli does not estimate {why}: give the weights' "
                         "measured size", field="weights_gib")
    layer_range, first, last = stage
    if g.v4 is not None:    # (hyper-connections, hash-routed MoE, compressors, indexers)
        return v4_ledger(g, tp, *stage)
    if g.dory is not None:  # (its attention or MLP blocks, nGPT scales: `models.dory`)
        return dory_ledger(g.layer_kinds, rp.vocab_rows(g, tp), g.vocab_size, g.hidden_size,
                           g.num_attention_heads, g.num_kv_heads, g.head_dim,
                           g.intermediate_size)
    if g.loop_layers:   # (IQuest Loop's decoder layers once, and a gate each)
        led = _ledger(decoder(g), tp, stage)
        led.model += gate_params(g, tp)
        return led
    if g.layer_windows:         # (Domyn Edge's head size a layer)
        return domyn_ledger(g, tp)
    if g.pangu_sinks is not None:   # (openPangu Pro MoE V2's sink attention)
        return pangu_v2_ledger(g, g.pangu_sinks, tp, *stage)
    if g.nas is not None:       # (Nemotron-NAS: heads and MLP width a layer)
        led = nas_ledger(g, g.nas, tp, *stage)
        if g.quantization == "fp8":     # (its linears' scales, attention's q/k/v/prob scales)
            led.fp32 += _fp8_layer_scales(g, tp, layer_range)
            led.model += 4 * sum(1 for i in _in(layer_range, g) if g.nas.kv_heads[i])
            for i in _in(layer_range, g) if g.fp8_ignored else ():
                _fp8_unquantised(layer_geometry(g, i), tp, i, g.layer_kinds[i], False, led)
        return led
    if g.model_type == KIMI_LINEAR:     # (KDA layers beside MLA: `kimi_linear_weights`)
        return kimi_linear_ledger(g, tp, *stage)
    if g.zamba is not None:     # (shared blocks and their uses: `kvcore.models.zamba2_weights`)
        return zamba2_ledger(g, tp)
    if g.model_type in MIMO_V2_TYPES:   # (K and V widths, heads and sinks a layer kind)
        return mimo_ledger(g, tp, *stage)
    if g.model_type == LONGCAT:     # (two attentions and MLPs a decoder layer)
        led = longcat_ledger(g, tp, g.zero_experts, layer_range, first, last)
        led.model += ngram_rank_params(g, tp) if first else 0   # (LongCat-Flash-Lite's)
        return led
    if g.model_type in (STEP3P5, STEP3_TEXT):
        # (Step-3.5's heads a layer, float32 routers, shared experts; Step3's MFA attention)
        led = (step3p5_ledger if g.model_type == STEP3P5 else step3_ledger)(g, tp, *stage)
        if g.model_type == STEP3_TEXT and first:    # (Step3-VL's tower: the first stage's)
            led.model += fp8_vision.tower_rank(g, tp)[0]
        if g.quantization == "fp8":     # (and Step-3.5's attention's q/k/v/prob scales)
            led.fp32 += _fp8_layer_scales(g, tp, layer_range)
            led.model += 4 * len(_in(layer_range, g)) if g.model_type == STEP3P5 else 0
        return led
    if g.classic is not None:
        led = classic_weights.ledger(g, g.classic, tp, layer_range, first, last)
        # (GLM-4V's tower: GLM4VModel builds it beside every stage's layers)
        led.model += fp8_vision.tower_rank(g, tp)[0]
        return led
    led = Ledger()
    if g.gemma is not None:
        dense, fp32 = gemma_rank_params(g, g.gemma, tp)
        # (the multimodal classes' towers and embedders: `kvcore.models.gemma4_towers`)
        led.model += dense + fp8_vision.tower_rank(g, tp)[0]
        led.fp32 += fp32
        return led
    if g.architecture == RNJ1:
        # (rnj1.py builds the embedding, the final norm and the head on every stage, none a
        # PPMissingLayer: tests/data/refused_lifted/pp)
        first = last = True
    vh = rp.vocab_rows(g, tp) * g.hidden_size
    eh = vh + g.added_vocab // tp * g.hidden_size   # (the embedding: Molmo's has rows more)
    head = rp.lm_head(g, tp)
    if first and last:
        led.model += eh + (0 if g.tie_word_embeddings else head) + rp.final_norm(g)
    else:
        led.model += (eh if first else 0) + (head + rp.final_norm(g) if last else 0)
    if first:
        # (with the embedding: what runs before layer 0)
        # (an fp8 checkpoint's tower linears: 1 byte a weight, float32 block scales)
        tower, tower_fp8, tower_scales = fp8_vision.tower_rank(g, tp)
        led.model += tower
        led.layer += tower_fp8
        led.fp32 += tower_scales
    else:   # (DeepSeek-OCR's separators: plain Parameters every stage builds)
        led.model += stage_kept(g)
    if g.fope_freqs and any(layer_range is None or i in layer_range
                            for i in range(g.num_layers)):
        # (Intern-S1-Pro's FoPE coefficients: one module for a stage's layers, get_rope's cache)
        led.model += fope_rank_params(g.fope_freqs, g.num_kv_heads, tp)
    shared = rp.shared_width(g)
    whole = g
    for i, kind in enumerate(whole.layer_kinds):
        if layer_range is not None and i not in layer_range:
            continue
        g = layer_geometry(whole, i)     # (IndexCache: no indexer in the layers it skips)
        moe = g.moe_layers[i] if i < len(g.moe_layers) else False
        if g.quantization == "fp8" and kind not in ("mamba", "mlp") and g.mla is None \
                and g.model_type not in NO_QUANT_ATTENTION:
            # Fp8KVCacheMethod's q/k/v/prob_scale: four scalars in the model dtype
            led.model += 4
        if g.quantization == "fp8" and moe and g.model_type in fp8_scales.QUANTISED_GATES \
                and "gate" not in layer_skips(g, i, kind, moe):
            # (the router built with the quant_config: fp8, with its scales)
            gate: fp8_scales.Linear = ("gate", (g.num_experts,), g.hidden_size, "replicated")
            led.model -= g.num_experts * g.hidden_size
            led.layer += g.num_experts * g.hidden_size
            led.fp32 += fp8_scales.rank_scales(g, [gate])
        if g.quantization == "fp8" and g.fp8_ignored:
            _fp8_unquantised(g, tp, i, kind, moe, led)
        if g.quantization == "fp8":
            led.fp32 += _fp8_scales(g, tp, fp8_shapes.layer_linears(g, tp, kind, moe, shared),
                                    moe and bool(g.num_experts))
            if g.vision_experts is not None:
                # (ERNIE-4.5-VL's float32 routers held in fp8, its vision experts' scales)
                routers, scales = ernie45_vl_quant.fp8_layer(g, i, tp, moe)
                led.fp32 += scales - routers
                led.layer += routers
        if g.model_type == "nemotron_h" or g.model_type in MAMBA_ONLY_TYPES:
            # one block a layer, one norm: a mixer, or a feed-forward layer (Mamba, Mamba2:
            # a mixer every layer)
            led.model += g.hidden_size
            if kind == "mamba":
                rp.mamba(g, tp, led)
            elif kind != "mlp":
                rp.attention(g, tp, led)
            else:
                rp.nemotron_mlp(g, tp, moe, shared, led)
            continue
        if kind == "mamba":
            rp.mamba(g, tp, led)
        else:
            rp.attention(g, tp, led)
        if kind == "parallel":
            rp.mamba(g, tp, led)  # Falcon-H1: a Mamba2 mixer beside the attention
        led.model += rp.layer_norms(g)
        if moe:
            rp.moe(g, tp, shared, led)
        elif g.intermediate_size:
            rp.dense_mlp(g, tp, led)
        if g.vision_experts is not None:    # (ERNIE-4.5-VL's second expert set)
            vision_experts_layer(g.vision_experts, g.hidden_size, g.intermediate_size, shared,
                                 moe, i, tp, led)
    return led


def _fp8_unquantised(g: ModelGeometry, tp: int, i: int, kind: str, moe: bool,
                     led: Ledger) -> None:
    """Layer `i`'s linears an fp8 checkpoint leaves unquantised (`g` as the layer is built):
    in the model dtype, no scales."""
    skips = layer_skips(g, i, kind, moe)
    plain = [lin for lin in fp8_shapes.layer_linears(g, tp, kind, moe, rp.shared_width(g))
             if lin[0] in skips]
    n = sum(sum(parts) * inp for _, parts, inp, _ in plain)
    if "experts" in skips:
        n += g.num_experts * (2 if g.model_type == "nemotron_h" else 3) * \
            g.hidden_size * g.moe_intermediate_size // tp
    led.layer -= n
    led.model += n
    led.fp32 -= _fp8_scales(g, tp, plain, "experts" in skips)


def _fp8_scales(g: ModelGeometry, tp: int, linears: list[fp8_scales.Linear],
                experts: bool) -> int:
    """The float32 scales of an fp8 checkpoint's `linears` (and routed `experts`) on a rank:
    a grid a weight with ``weight_block_size``, else one a shard (`kvcore.models.fp8_scales`)."""
    return fp8_scales.rank_scales(g, linears) + (
        fp8_shapes.expert_scales(g, tp, g.fp8_block) if experts else 0)


def _in(layers: range | None, g: ModelGeometry) -> range:
    return range(len(g.layer_kinds)) if layers is None else layers


def _fp8_layer_scales(g: ModelGeometry, tp: int, layers: range | None) -> int:
    """The float32 scales of an fp8 checkpoint's decoder `layers` (None: all) on a rank,
    linears and experts, for the classes whose ledgers are their own (Step3's, Step-3.5's)."""
    out = 0
    for i in _in(layers, g):
        kind = g.layer_kinds[i]
        moe = g.moe_layers[i] if i < len(g.moe_layers) else False
        one = layer_geometry(g, i)
        out += _fp8_scales(one, tp, fp8_shapes.layer_linears(one, tp, kind, moe,
                                                              rp.shared_width(g)), moe)
    return out


def estimate_params(g: ModelGeometry) -> tuple[int, int]:
    """(parameters not in MXFP4, parameters in MXFP4), of the whole model."""
    led = _ledger(g)
    return led.model + led.layer + led.fp32 + led.int32 + led.bf16, led.mx_params


def estimate_weights_bytes(g: ModelGeometry, tp: int = 1, stage: Stage = WHOLE) -> int:
    """Weight bytes on one tensor-parallel worker (of one pipeline `stage`)."""
    led = _ledger(g, tp, stage)
    layer_bytes = 1 if g.quantization == "fp8" else DTYPE_BYTES[g.dtype]
    # (an AWQ / GPTQ checkpoint's packed linears and experts in place of their dtype weights)
    moved, packed = int_quant_rank.rank_bytes(g, tp, stage)
    # (a ModelOpt checkpoint's quantised linears and experts, and its attention scales)
    mo_moved, mo_held = modelopt_rank.rank_bytes(g, tp, stage)
    if stage[1]:    # (and its vision tower's, loaded on the first stage)
        tower_moved, tower_held = tower_modelopt.rank_bytes(g, tp)
        mo_moved, mo_held = mo_moved + tower_moved, mo_held + tower_held
    moved, packed = moved + mo_moved, packed + mo_held
    return (led.model * DTYPE_BYTES[g.dtype] + (led.layer - moved) * layer_bytes
            + (led.fp32 + led.int32) * 4 + led.bf16 * 2 + led.mx_bytes + packed)


def mamba_layer_params(g: ModelGeometry) -> int:
    """Parameters of one Mamba layer (projections, conv, SSM): the clock's weight stream."""
    if g.mamba is None:
        return 0
    led = Ledger()
    rp.mamba(g, 1, led)
    return led.model + led.layer + led.fp32 + led.int32
