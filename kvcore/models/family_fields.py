"""The geometry fields a family adds once `kvcore.models.hf_config` has read the config's
common keys: LFM2's MLP widths, experts and tied head (`kvcore.models.lfm2`), K2-Horizon's
router bias (`kvcore.models.k2_horizon`), openPangu's sandwich norms, router bias and MoE
layers (`kvcore.models.openpangu`), Sarvam's MoE layers, shared experts and router bias
(`kvcore.models.sarvam`), LongCat-Flash's zero experts (`kvcore.models.longcat`) and
LongCat-Flash-Lite's n-gram embedding (`kvcore.models.longcat_ngram`),
ERNIE-4.5's MoE layers, routers and vision experts (`kvcore.models.ernie45`), Molmo's norms
and added embedding rows (`kvcore.models.molmo`), Zamba2's shared blocks
(`kvcore.models.zamba2`), Kimi Linear's KDA layers (`kvcore.models.kimi_linear`),
DeepSeek-V4's compressed layers (`kvcore.models.deepseek_v4`),
Nemotron-NAS's layers from block_configs (`kvcore.models.nemotron_nas`),
and the models whose weights kvcli counts with a ledger of their own:
Step3's MFA query, MoE layers, shared expert and RoPE positions (`kvcore.models.step3`),
Step-3.5's MoE layers, shared expert, query heads a layer and output gate
(`kvcore.models.step3p5`), MiMo-V2's heads, K and V widths and sinks a layer
(`kvcore.models.mimo_v2`), AFMoE's gated attention, norms and dense layers
(`kvcore.models.afmoe`), Beam's (`kvcore.models.beam`), Granite's attention sinks
(`kvcore.models.attention_extras`), HyperCLOVAX's post norms, Laguna's heads a layer, MoE
layers and gate (`kvcore.models.laguna`).
A quantised checkpoint of a family kvcli does not size is refused by name or left unsized
(`weights_unmodelled`) here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kvcore.models.afmoe import AFMOE, afmoe_fields
from kvcore.models.attention_extras import GRANITE_SINK_TYPES, granite_sinks
from kvcore.models.beam import BEAM, beam_fields
from kvcore.models.deepseek_v4 import DEEPSEEK_V4, read_v4
from kvcore.models.deepseek_v4_weights import unmodelled as v4_unmodelled
from kvcore.models.domyn_edge import DOMYN, domyn_fields
from kvcore.models.dory import DORY, dory_layout
from kvcore.models.ernie45 import ERNIE_MOE, ERNIE_VL, ernie_fields
from kvcore.models.geometry import ModelGeometry
from kvcore.models.iquest_loop import IQUEST_LOOP, iquest_fields
from kvcore.models.k2_horizon import K2_HORIZON, k2_horizon_fields
from kvcore.models.kimi_linear import KIMI_LINEAR, kimi_linear_fields
from kvcore.models.laguna import LAGUNA, laguna_fields
from kvcore.models.lfm2 import LFM2_TYPES, lfm2_fields
from kvcore.models.longcat import LONGCAT, longcat_unsized
from kvcore.models.longcat_ngram import ngram_fields
from kvcore.models.mimo_v2 import MIMO_V2_TYPES, mimo_fields
from kvcore.models.mimo_v2 import unmodelled as mimo_unmodelled
from kvcore.models.molmo import MOLMO, molmo_fields
from kvcore.models.molmo2 import MOLMO2_TEXT, molmo2_fields
from kvcore.models.muse_glimmer import MUSE_TEXT, muse_text_fields
from kvcore.models.nemotron_nas import DECILM, NEMOTRON_NAS, nas_fields
from kvcore.models.openpangu import PANGU_ULTRA_MOE, pangu_fields
from kvcore.models.pangu_sinks import PANGU_V2, pangu_sink_fields
from kvcore.models.radio import NEMOTRON_VL_ARCHS, towers_in_float32
from kvcore.models.sarvam import SARVAM_MLA, check_sarvam, sarvam_fields
from kvcore.models.step3 import STEP3_TEXT, step3_fields, unsized_quant
from kvcore.models.step3p5 import STEP3P5, step3p5_fields
from kvcore.models.unlimited_ocr import UNLIMITED_OCR, rswa_window
from kvcore.models.zamba2 import ZAMBA2, zamba2_blocks


def family_fields(g: ModelGeometry, c: dict[str, Any], written: dict[str, Any],
                  n_layers: int, get: Callable[..., Any], get_int: Callable[..., Any],
                  get_dim: Callable[..., Any], source: str) -> ModelGeometry:
    """`g` with its family's fields (`g` itself for the other models). `c` is the text config
    as read, `written` as the file wrote it (ERNIE-4.5-VL's [text, vision] lists)."""
    t, quantised = g.model_type, bool(g.quantization)
    check_sarvam(g.architecture, t, c, source)
    if g.architecture == UNLIMITED_OCR:     # (R-SWA caches: the window vLLM copied)
        g = replace(g, rswa_window=rswa_window(c))
    if g.architecture == DOMYN:     # (a head size, a window and RoPE or none a layer)
        return replace(g, **domyn_fields(c, n_layers, g.num_kv_heads, g.head_dim, source))
    if t == DORY:       # (its recurrent blocks and loops)
        return replace(g, dory=dory_layout(c, n_layers, source), weights_unmodelled=(
            "a quantised Dory checkpoint's weights" if quantised else ""))
    if g.architecture == IQUEST_LOOP:   # (its heads hidden / heads wide, its passes)
        return replace(g, **iquest_fields(n_layers, g.hidden_size, g.num_attention_heads,
                                          quantised))
    if g.architecture == PANGU_V2:  # (sink attention, openPangu's norms, router and MoE)
        return replace(g, **pangu_fields(get, g.moe_layers),
                       **pangu_sink_fields(c, get, n_layers, source),
                       weights_unmodelled="a quantised PanguProMoEV2ForCausalLM checkpoint's "
                                          "weights" if quantised else "")
    unsized = unsized_quant(g.quantization, bool(g.fp8_ignored),
                            "Step3" if t == STEP3_TEXT else "Step-3.5")
    if t == DEEPSEEK_V4:
        # (its weights: `kvcore.models.deepseek_v4_weights`, which says what it leaves out)
        return replace(g, v4=read_v4(c, n_layers, get_dim, source),
                       weights_unmodelled=v4_unmodelled(g))
    if t in MIMO_V2_TYPES:   # (a quantised checkpoint's weights but fp8 blocks not counted)
        return replace(g, **mimo_fields(c, get, get_dim, n_layers, source),
                       weights_unmodelled=mimo_unmodelled(g))
    if g.architecture in NEMOTRON_VL_ARCHS:     # (its towers in the text config's dtype)
        return replace(g, vision_in_float32=towers_in_float32(written, g.dtype))
    if t == MUSE_TEXT:  # (its output gate and four norms a layer)
        return replace(g, **muse_text_fields(g.head_dim))
    if t == "hyperclovax":  # (hyperclovax.py's post_norm1 / post_norm2 with use_post_norm)
        return replace(g, sandwich_norms=bool(get("use_post_norm", False)))
    if t == "seed_oss":     # (transformers' SeedOssAttention: o_proj's bias its own key)
        return replace(g, attention_out_bias=bool(get("attention_out_bias", False)))
    if t in GRANITE_SINK_TYPES:
        return replace(g, attention_sinks=granite_sinks(t, c, get))
    if t == LAGUNA:
        return replace(g, **laguna_fields(c, n_layers, g.num_attention_heads, g.head_dim,
                                          g.num_experts, g.layer_kinds, source))
    if t == AFMOE:
        return replace(g, **afmoe_fields(get_int, n_layers, g.num_experts))
    if t == BEAM:
        return replace(g, **beam_fields(c, n_layers, g.num_experts, source))
    if t in LFM2_TYPES:
        return replace(g, **lfm2_fields(t, n_layers, get, get_dim, source))
    if t == KIMI_LINEAR:    # (KDA layers beside MLA ones)
        fields = kimi_linear_fields(c, n_layers, get_dim, g.mla, source)
        if quantised:
            fields["weights_unmodelled"] = "a quantised Kimi Linear checkpoint's weights"
        return replace(g, **fields)
    if t == K2_HORIZON:     # (its unmodelled attentions refused)
        return replace(g, **k2_horizon_fields(get))
    if t == PANGU_ULTRA_MOE:
        return replace(g, **pangu_fields(get, g.moe_layers))
    if t == SARVAM_MLA:
        return replace(g, **sarvam_fields(get, get_int, get_dim, n_layers, g.num_experts,
                                          g.moe_intermediate_size, quantised))
    if t == LONGCAT:        # (a quantised checkpoint: `longcat_fp8`)
        g = replace(g, zero_experts=get_int("zero_expert_num", 0), **ngram_fields(
            g.architecture, get, get_dim, g.vocab_size, g.hidden_size, source))
        return replace(g, weights_unmodelled=longcat_unsized(g, c))
    if t in (ERNIE_MOE, ERNIE_VL):
        return replace(g, **ernie_fields(written, t, n_layers, g.num_experts, get, source))
    if t == NEMOTRON_NAS or g.architecture == DECILM:   # (block_configs: a layer's heads, MLP)
        # (ModelOpt and fp8 sized: `kvcore.models.weights`)
        sized = g.modelopt is not None or g.quantization == "fp8"
        return replace(g, **nas_fields(c, n_layers, g.num_attention_heads, g.hidden_size,
                                       g.head_dim, quantised and not sized, source))
    if t == MOLMO:
        return replace(g, **molmo_fields(c, g))
    if t == MOLMO2_TEXT:
        return replace(g, **molmo2_fields(c, g))
    if t == ZAMBA2:         # (a quantised one's weights not counted)
        return replace(g, zamba=zamba2_blocks(c, source), weights_unmodelled=(
            "a quantised Zamba2 checkpoint's weights" if quantised else ""))
    if t == STEP3_TEXT:
        return replace(g, **step3_fields(c, get_dim, g.num_layers, unsized, source))
    if t == STEP3P5:
        return replace(g, **step3p5_fields(c, get_dim, g.layer_kinds, g.num_attention_heads,
                                           unsized, source))
    return g
