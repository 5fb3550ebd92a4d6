"""The buffers vLLM 0.33's model classes keep on the GPU beside their parameters, per
tensor-parallel rank: what `determine_available_memory` subtracts with the weights before it
sizes the KV pool (the fall in free memory over start-up and profiling; "Model loading took"
counts them too: docs/config.md, "Buffers").

- Each attention layer's four float32 scales (`_k_scale`, `_v_scale`, `_q_scale`,
  `_prob_scale`: set_default_quant_scales, layers/attention/attention.py): 16 B.
- One `cos_sin_cache` per distinct RoPE (`kvcore.models.rope_caches`; `get_rope` caches the
  object by its head size, rotary dim, positions, parameters and dtype, so every layer, and an
  MTP module, with one config share it): rows x rotary dim in the model dtype (gpt-oss:
  float32). Rows: the positions vLLM passes (`max_position_embeddings`), times the factor for
  `linear` (Gemma 3's global layers); `original_max_position_embeddings` times the factor for
  YaRN and DeepSeek's YaRN; LongRoPE's short and long caches, `original_max_position_embeddings`
  + the positions. Rotary dim: the head dim times `partial_rotary_factor` (MLA: `qk_rope_head_dim`).
  Gemma 3 has two: its local layers' plain RoPE at `rope_local_base_freq`, and the global one.
  MRoPE (an ``mrope_section``): 4 x the rows under Qwen2-VL, Qwen2.5-VL and GLM-4.xV (mrope.py's
  positions_factor, left at get_rope's default by qwen2.py and glm4*.py), 1 x under Qwen3-VL and
  Qwen3.5.
  No RoPE: Jamba, Nemotron-H, Granite 4.0-H with `position_embedding_type` nope.
- Gemma's (PaliGemma's text model), Gemma 2's and 3's embedding normalizer: one scalar in the
  model dtype; Gemma 3n's and 4's RoPE caches and scalars: `kvcore.models.gemma_buffers`.
- DeepSeek-V4's float32 RoPE caches and top-k scratch: `kvcore.models.deepseek_v4_buffers`;
  DeepSeek-V3.2's and GLM-5's top-k scratch the same (nvidia/model.py's DeepseekV32Model,
  deepseek_v2.py's DeepseekV2Model where ``index_topk`` is set: ``topk_indices_buffer``,
  max_num_batched_tokens x ``index_topk`` int32, a plain tensor made on the GPU as the model
  is built, on every rank and stage, so the memory profile counts it).
- Falcon-H1's `mup_vector` a Mamba mixer: (2 d_ssm + 2 G S + heads) / TP in the model dtype,
  G the groups as vLLM duplicates them over the ranks (falcon_h1.py).
- A vision tower's, on the first stage while it is built: Gemma 3's SigLIP `position_ids`
  (int64, one a patch), Qwen3.5's, Qwen3-VL's, Qwen2-VL's and Qwen2.5-VL's rotary cache
  (8,192 rows x half its head dim), Gemma 3n's and 4's towers' (`kvcore.models.gemma3n_towers`,
  `gemma4_towers`); not a buffer but allocated with them, Qwen3-VL's deepstack scratch (a
  max_num_batched_tokens x hidden tensor in the model dtype a deepstack level); the towers
  that count their own (`VisionParams.buffers`: Llama 4's, the LLaVA family's, PaliGemma's).
Not memory: Mamba2's `conv_weights`, a view of the conv weight. Checked against vLLM's classes
on the meta device for every census case (tests/data/weights_census/answers.json,
`buffer_bytes_by_dtype`, less the views).
"""

from __future__ import annotations

from typing import Any

from kvcore.models.deepseek_v4_buffers import topk_scratch_bytes, v4_buffer_bytes
from kvcore.models.dory import extra_attentions
from kvcore.models.ernie45 import ERNIE_VL
from kvcore.models.fp8_renames import architecture
from kvcore.models.gemma_buffers import gemma_scalars
from kvcore.models.geometry import ModelGeometry
from kvcore.models.interns1_pro import ARCH as INTERNS1_PRO
from kvcore.models.interns1_pro import fope_rank_buffer_bytes
from kvcore.models.pangu_v2 import (
    normed_sink_key_bytes,
    sink_value_buffer_bytes,
)
from kvcore.models.qwen3_5 import QWEN3_5_TYPES, VISION_DEFAULTS
from kvcore.models.qwen_vl import rotary_buffer_bytes
from kvcore.models.rope_cache import RopeCache
from kvcore.models.rope_caches import rope_caches
from kvcore.models.siglip import SIGLIP_DEFAULTS
from kvcore.models.vision_keys import vision_config, vision_dim
from kvcore.models.vision_towers import QWEN2_VL, QWEN3_VL
from kvcore.specs import DTYPE_BYTES

ATTENTION_KINDS = ("full", "sliding", "chunked", "mla", "parallel")
_GEMMA = ("gemma", "gemma2", "gemma3", "gemma3_text", "vaultgemma")


def buffer_fields(cfg: dict[str, Any], rope_keys: dict[str, Any], g: ModelGeometry, get: Any,
                  tower_buffers: int) -> dict[str, Any]:
    """The geometry's buffer fields: its RoPE caches (`kvcore.models.rope_caches`, read from
    `rope_keys`; none where Intern-S1-Pro's FoPE keeps its own) and its vision towers' buffer
    bytes (`tower_buffers`, those the tower reader counted, and `vision_buffers`)."""
    return {"rope_caches": () if g.fope_freqs else rope_caches(rope_keys, g, get),
            "vision_buffers": tower_buffers + vision_buffers(cfg, g)}


def vision_buffers(cfg: dict[str, Any], g: ModelGeometry) -> int:
    """The buffer bytes (whole on every rank of the first stage) of the vision towers that do
    not count their own (`VisionParams.buffers`): Gemma 3n's and 4's parts' sums, Gemma 3's
    SigLIP `position_ids`, the rotary caches of Qwen2-VL's, Qwen2.5-VL's, Qwen3-VL's and
    Qwen3.5's towers; none for the rest (LFM2-VL's, the LLaVA family's without buffers)."""
    if not g.vision_params:
        return 0
    if g.vision_parts:      # (Gemma 3n's and 4's towers: each part's own)
        return sum(p.buffers for p in g.vision_parts)
    arch = architecture(cfg.get("architectures"))
    # (the keys were checked when the tower's parameters were read)
    if g.model_type.startswith("gemma3"):
        v = vision_config(cfg, g.source)
        return 8 * (vision_dim(v, SIGLIP_DEFAULTS, "image_size", g.source)
                    // vision_dim(v, SIGLIP_DEFAULTS, "patch_size", g.source)) ** 2
    if arch in QWEN2_VL:
        return rotary_buffer_bytes(cfg, arch, DTYPE_BYTES[g.dtype])
    # (MiniCPM-V 4.6's and 4.7's Qwen3.5 text model has their own tower, without buffers)
    qwen3_5 = g.model_type in QWEN3_5_TYPES and not arch.startswith("MiniCPMV4_")
    if qwen3_5 or arch in QWEN3_VL or arch == INTERNS1_PRO:
        # (a null key is its class default, as the tower's parameters read it)
        v = vision_config(cfg, g.source)
        width = vision_dim(v, VISION_DEFAULTS, "hidden_size", g.source)
        return 8192 * (width // vision_dim(v, VISION_DEFAULTS, "num_heads", g.source) // 2
                       ) * DTYPE_BYTES[g.dtype]
    return 0


def _mup(g: ModelGeometry, tp: int) -> int:
    m = g.mamba
    assert m is not None
    groups = m.n_groups if m.n_groups % tp == 0 else tp
    return (2 * m.d_inner + 2 * groups * m.d_state + m.n_heads) // tp * DTYPE_BYTES[g.dtype]


def _on_stage(c: RopeCache, kinds: list[str], layers: range | None) -> bool:
    """Whether a stage holding `layers` (of `kinds`) builds cache `c`: where one of its
    layers does (`RopeCache.layers`, else `.kinds`; neither: every attention layer does)."""
    if c.layers:
        return layers is None or any(i in layers for i in c.layers)
    return not c.kinds or bool(set(c.kinds) & set(kinds))


def estimate_buffer_bytes(g: ModelGeometry, tp: int = 1, layers: range | None = None,
                          first: bool = True, batched_tokens: int = 0) -> int:
    """The buffer bytes on one of `tp` ranks (of a pipeline stage: its `layers`, `first`
    whether it builds the vision tower; `batched_tokens`: max_num_batched_tokens, which sizes
    the scratch some multimodal classes allocate as they are built: Qwen3-VL's deepstack,
    Gemma 3n's and 4's per-layer embeddings)."""
    if g.v4 is not None:        # (no attention scales; its top-k scratch)
        return v4_buffer_bytes(g, layers, batched_tokens)
    kinds = [k for i, k in enumerate(g.layer_kinds) if layers is None or i in layers]
    attn = sum(k in ATTENTION_KINDS for k in kinds)
    if g.zamba is not None:     # (an Attention each use of a shared block: `models.zamba2`)
        attn = g.zamba.uses
    if g.dory is not None:      # (an Attention a loop in its recurrent blocks)
        attn += extra_attentions(g.layer_kinds, g.dory, layers)
    n = 16 * attn
    if g.model_type == "kimi_linear":   # (its MLA layers' fifth scalar, _one_scale)
        n += 4 * attn
    if attn:
        # (ERNIE-4.5-VL's caches are one a layer, all alike: a stage holds its layers')
        caches = g.rope_caches[:attn] if g.model_type == ERNIE_VL else [
            c for c in g.rope_caches if _on_stage(c, kinds, layers)]
        n += sum(c.nbytes for c in caches)
        if g.fope_freqs:    # (Intern-S1-Pro's, its KV heads a rank)
            n += fope_rank_buffer_bytes(g.fope_freqs, g.num_kv_heads, tp, g.head_dim,
                                        g.max_position_embeddings, DTYPE_BYTES[g.dtype])
    if g.model_type in _GEMMA:
        n += DTYPE_BYTES[g.dtype]
    if g.model_type == "apertus":   # (each layer's XIELU: beta and eps, bfloat16 buffers)
        n += 4 * len(kinds)
    if g.pangu_sinks is not None:   # (zero sink values, where the checkpoint has none)
        n += sink_value_buffer_bytes(g, g.pangu_sinks, tp, attn)
        n += normed_sink_key_bytes(g, g.pangu_sinks, tp, attn)     # (and the normed keys)
    # (LongCat-Flash-Lite's n-gram buffers: the first stage's, with its embedding)
    n += g.class_buffers if first or not g.ngram_tables else 0
    if g.gemma is not None:
        n += gemma_scalars(g)
    if g.model_type == "falcon_h1":
        n += sum(k in ("mamba", "parallel") for k in kinds) * _mup(g, tp)
    if first and g.classic is not None:
        n += g.classic.buffers
    if first and g.vision_params:        # (a tower vLLM skips holds none)
        n += g.vision_buffers
        # (Qwen3-VL's deepstack_input_embeds: allocated whole on every rank as the model is
        # built, where the tower is; tests/data/qwen_vl/deepstack.json)
        n += g.vision_deepstack * batched_tokens * g.hidden_size * DTYPE_BYTES[g.dtype]
    # (Gemma 3n's and 4's multimodal classes' per_layer_embeddings, a max_num_batched_tokens x
    # layers x width zeros kept for CUDA graphs: on every rank, whatever the towers;
    # tests/data/weights_gemma_mm)
    n += batched_tokens * g.ple_scratch_width * DTYPE_BYTES[g.dtype]
    if g.mla is not None and g.mla.indexer is not None:     # (sparse MLA's top-k scratch)
        n += topk_scratch_bytes(batched_tokens, g.mla.indexer.topk)
    # (not here: an mm-prefix LM's (Gemma 3's, PaliGemma's) FlashAttention builders' int32
    # (max_num_batched_tokens, 2) ranges, made as the KV cache is initialised, after the
    # memory profile and before the CUDA graph captures it measures: no KV memory taken)
    return n
