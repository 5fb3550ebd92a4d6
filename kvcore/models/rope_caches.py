"""The distinct RoPE caches of a text model's attention layers, as vLLM 0.33's `get_rope` builds
and shares them (`kvcore.models.buffers` counts their bytes): one `cos_sin_cache` per distinct
head size, rotary dim, positions, parameters and dtype, so every layer, and an MTP module, with
one config share it; the families that build their own (Gemma 3n / 4, DeepSeek-V4, openPangu
V2, Domyn Edge, MiMo-V2, ERNIE-4.5-VL, RNJ-1's and Dory's per layer type) through their
modules; the Transformers backend's classes' inv_freq rows in place of the cache.
"""

from __future__ import annotations

from typing import Any

from kvcore.models.context_limit import _kind, _rope_parameters
from kvcore.models.deepseek_v4_buffers import v4_rope_caches
from kvcore.models.domyn_edge import domyn_rope_caches
from kvcore.models.dory import dory_ropes
from kvcore.models.ernie45 import ERNIE_VL
from kvcore.models.gemma_buffers import gemma_rope_caches
from kvcore.models.geometry import ModelGeometry
from kvcore.models.k2_horizon import k2_rope_dim
from kvcore.models.mimo_v2 import MIMO_V2_TYPES, mimo_rope_caches
from kvcore.models.pangu_v2 import pangu_v2_rope_caches
from kvcore.models.rnj1 import RNJ1, rnj1_ropes
from kvcore.models.rope_cache import RopeCache
from kvcore.models.rope_shapes import refuse_misfit_rope

# (Kimi Linear's MLA is NoPE: its KimiDecoderLayer builds it without use_rope)
NO_ROPE_TYPES = ("jamba", "nemotron_h", "kimi_linear")
# the text classes vLLM 0.33 serves on its Transformers backend (registry.py's "transformers"
# rows; the pre-Llama ones: `kvcore.models.classic_blocks`): transformers' rotary module keeps
# inv_freq and original_inv_freq, float32, half the rotary dim each, in place of get_rope's
# cos/sin cache (tests/data/weights_census/transformers_rope/)
TRANSFORMERS_ROPE = frozenset({
    "ArceeForCausalLM", "CwmForCausalLM", "GlmForCausalLM", "HunYuanDenseV1ForCausalLM",
    "HunYuanMoEV1ForCausalLM", "Jais2ForCausalLM", "OlmoForCausalLM", "Olmo2ForCausalLM",
    "Olmo3ForCausalLM", "FlexOlmoForCausalLM", "SeedOssForCausalLM", "SmolLM3ForCausalLM",
    "VaultGemmaForCausalLM"})
# the RoPE types whose cache max_position alone sizes (vLLM's _CACHE_ONLY_ROPE_TYPES,
# config/speculative.py)
CACHE_ONLY_ROPE_TYPES = ("default", "linear", "llama3", "ntk", "proportional")
# what transformers' config classes give a RoPE key a config leaves out (Qwen3.5's rope
# parameters, Gemma 3's local base frequency: a second RoPE whatever its value)
_PARTIAL = {"qwen3_5_text": 0.25, "qwen3_5_moe_text": 0.25}
# (and GLM-4.1V's and GLM-4.5V's text models: glm4.py and glm4_moe.py leave it too; qwen2.py's
# and qwen3_moe.py's own layers under Qwen2-Audio, Qwen2.5-Omni and Qwen3-Omni)
MROPE_X4_TYPES = ("qwen2_vl", "qwen2_5_vl", "glm4v_text", "glm4v_moe_text", "qwen2",
                  "qwen3_moe", "qwen3",     # (qwen3.py's under Keye-VL: tests/data/.../mm_ernie)
                  "paddleocr_vl",           # (ernie45.py's under PaddleOCR-VL: .../mm_ocr)
                  "glm_ocr_text")           # (glm4.py's under GLM-OCR: .../mm_ocr)


def _num(value: Any, default: float) -> float:
    """A positive finite number of a config (a factor, a length), else `default`: the
    context limit's reading refuses the values that matter, this only sizes a cache."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok and 0 < value < 2 ** 63 else default


def _rows(rp: dict[str, Any], max_pos: int, original: Any = None) -> int:
    kind = _kind(rp)
    factor = _num(rp.get("factor"), 1)
    if kind == "linear":
        return int(max_pos * factor)
    if kind == "longrope":      # (Phi3LongRoPEScaledRotaryEmbedding: the short cache, then the
        # long one; `original`: the top-level key transformers moves into the parameters)
        return int(_num(rp.get("original_max_position_embeddings", original), max_pos)) + max_pos
    if kind in ("yarn", "deepseek_yarn"):
        return int(_num(rp.get("original_max_position_embeddings"), max_pos) * factor)
    return max_pos


def _per_position(rp: dict[str, Any]) -> float | None:
    kind = _kind(rp)
    if kind not in CACHE_ONLY_ROPE_TYPES:
        return None
    return _num(rp.get("factor"), 1) if kind == "linear" else 1.0


def rope_caches(cfg: dict[str, Any], g: ModelGeometry, get: Any) -> tuple[RopeCache, ...]:
    """The distinct RoPE caches of the text model read from config `cfg` (`get`: its keys
    with the class defaults)."""
    if (g.model_type in NO_ROPE_TYPES or get("position_embedding_type") == "nope"
            or (g.zamba is not None and not g.zamba.rope)):     # (Zamba2 without use_mem_rope)
        return ()
    if g.gemma is not None:     # (Gemma 3n, Gemma 4: a RoPE a layer type and head size)
        return gemma_rope_caches(cfg, g, get)
    if g.v4 is not None:        # (DeepSeek-V4: float32, one for its sliding-only layers, one
        return v4_rope_caches(cfg, g)   # for its compressed ones)
    if g.pangu_sinks is not None:   # (openPangu Pro MoE V2's: its rotary part, no theta)
        return pangu_v2_rope_caches(g, g.pangu_sinks)
    if g.layer_windows:         # (Domyn Edge's: float32, one a head size)
        return domyn_rope_caches(g)
    if g.model_type in MIMO_V2_TYPES:   # (a head size and base a layer kind)
        return mimo_rope_caches(cfg, g, get)
    if g.model_type == ERNIE_VL:
        # (Ernie4_5_VLRotaryEmbedding: an MRoPE each attention layer builds itself, not
        # get_rope's shared one; 4 x the positions, the whole head rotated)
        pos = g.max_position_embeddings
        return tuple(RopeCache(4 * pos, g.head_dim, g.dtype, f"ernie-4.5-vl layer {i}", pos,
                               None) for i in range(g.num_layers))
    if g.classic is not None and not g.classic.rope_cache:
        return ()     # (ALiBi, learned positions, the Transformers backend's inv_freq)
    dtype = "float32" if g.model_type == "gpt_oss" else g.dtype
    sets = _rope_parameters(cfg) or [{}]
    pos = g.max_position_embeddings
    out: dict[str, RopeCache] = {}      # (by what get_rope's cache tells apart)
    each: list[RopeCache] = []          # (one a parameter set, alike or not)
    # (Step-3.5's RoPE a layer type, "full_attention" / "sliding_attention": a kind's layers)
    typed = cfg.get("rope_parameters") if g.model_type == "step3p5" else None
    kinds_of: list[tuple[str, ...]] = [(k.removesuffix("_attention"),) for k in typed] \
        if isinstance(typed, dict) and len(typed) == len(sets) else [()] * len(sets)
    layers_of: list[tuple[int, ...]] = [()] * len(sets)
    rnj1 = g.architecture == RNJ1
    if rnj1:        # (a RoPE a layer type its layers use: `kvcore.models.rnj1`)
        sets, layers_of = rnj1_ropes(cfg, g.source)
        kinds_of = [()] * len(sets)
    if g.dory is not None:  # (a RoPE a block type its blocks use: `kvcore.models.dory`)
        sets, kinds_of = dory_ropes(cfg, g.num_layers, g.head_dim, g.source)
        layers_of = [()] * len(sets)
    for rp, kinds, layers in zip(sets, kinds_of, layers_of, strict=True):
        if g.mla is not None:
            head = dim = g.mla.qk_rope_head_dim
        elif g.model_type == "k2_horizon":     # (k2_horizon.py: only rope_head_dim rotates)
            head, dim = g.head_dim, k2_rope_dim(get, g.head_dim, g.source)
        else:
            given = rp.get("partial_rotary_factor") or get("partial_rotary_factor")
            head, dim = g.head_dim, int(g.head_dim * min(_num(given, _PARTIAL.get(g.model_type,
                                                                                   1)), 1))
        refuse_misfit_rope(rp, _kind(rp), dim, "rope_parameters" if "rope_parameters" in cfg
                           else "rope_scaling", g.architecture, g.source)
        theta = float(_num(rp.get("rope_theta", get("rope_theta")), 10000))
        key = repr((head, dim, theta, sorted(rp.items())))
        # (MRoPE's cache holds 4 x the positions where the layers keep get_rope's default
        # positions_factor: Qwen2ForCausalLM under Qwen2-VL and Qwen2.5-VL; Qwen3-VL passes 1)
        times = 4 if "mrope_section" in rp and g.model_type in MROPE_X4_TYPES else 1
        per = _per_position(rp)
        rows = _rows(rp, pos, get("original_max_position_embeddings"))
        kinds = (*out[key].kinds, *kinds) if key in out and kinds else kinds
        # (two types' equal parameters: get_rope's one cache, built by both types' layers)
        layers = tuple(sorted({*out[key].layers, *layers})) if key in out and layers \
            else layers
        out[key] = RopeCache(rows * times, dim, dtype, key, pos,
                             None if per is None else per * times, kinds, layers)
        each.append(out[key])
    ix = g.mla.indexer if g.mla is not None else None
    if ix is not None and not get("indexer_rope_interleave") and any(
            ix.in_layer(i) for i in range(g.num_layers)):
        # the indexer's own get_rope, neox-style unless indexer_rope_interleave (deepseek_v2.py
        # DeepseekV2MLAAttention): a second cache beside the attention's interleaved one (in
        # a layer with an indexer: IndexCache's skipping layers build none)
        out.update({c.key + " neox": c._replace(key=c.key + " neox") for c in out.values()})
    if g.model_type.startswith("gemma3") and not rnj1:
        key = repr((g.head_dim, "local", get("rope_local_base_freq")))
        out[key] = RopeCache(pos, g.head_dim, dtype, key, pos, 1.0)
    if g.architecture in TRANSFORMERS_ROPE:
        # (two float32 rows of half the rotary dim a parameter set: OLMo 3's module a layer
        # type, their parameters alike or not)
        return tuple(RopeCache(2, c.dim // 2, "float32", f"inv_freq {i} {c.key}", c.positions,
                               None, c.kinds) for i, c in enumerate(each))
    return tuple(out.values())


def with_positions(cache: RopeCache, positions: int) -> RopeCache:
    """`cache` built for `positions` (a type max_position alone sizes)."""
    assert cache.per_position is not None
    return cache._replace(rows=int(positions * cache.per_position), positions=positions)
