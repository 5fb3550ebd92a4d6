"""Human-readable formulas and the JSON document for a `SizingResult` (used by `kvcli config`).

JSON keys (stable):
  model, source, layers (count), layer_kinds ({kind: count}), dtype, kv_cache_dtype (as
  vLLM stores it: a sparse MLA model's fp8 is fp8_ds_mla, `kvcore.models.sparse_mla`),
  block_size (smallest group block size), max_model_len, max_num_batched_tokens,
  max_in_flight_tokens, tensor_parallel_size, pipeline_parallel_size,
  memory: {gpu_memory_gib, gpu_memory_utilization, weights_gib, weights_estimated,
           weights_unquantised_method, buffers_bytes, activation_gib, available_kv_cache_bytes,
           available_kv_cache_gib} (null fields when --num-blocks was given without GPU memory),
  groups: [{index, kind, block_size, page_size_bytes, page_formula, layers: [names],
            num_layers, blocks_per_request}],
  bytes_per_block, num_blocks, num_tensors,
  kv_cache_tokens (vLLM 0.33's "GPU KV cache size": int(max_concurrency * max_model_len)),
  pool_tokens (num_blocks - 1 usable blocks x smallest block size),
  pool_tokens_by_group (the same usable blocks x each group's block size, in group order: in a
  block-outermost pool, DeepSeek-V4's, one block id holds that many tokens of each group),
  max_concurrency (requests at max_model_len at once), max_model_len_fits (the largest
  max_model_len whose one request fits, searched up to the model's max position embeddings),
  prefix_match: {prefix_match_unit, scheduler_block_size, hash_block_size, partial_hash_hits,
                 cache_hit_alignment_tokens} (vLLM's --prefix-match-unit, kvcore.prefix_match),
  stages: [{stage, layers: [first, last], kv_layers, weights_bytes, available_bytes,
            buffers_bytes, bytes_per_block, num_blocks}] (pipeline parallelism, [] without; with
           stages, memory and bytes_per_block are those of the stage that sets the pool: the
           fewest blocks),
  draft: {model, method, architecture, source, layers, num_kv_heads, head_dim, layer_names,
          weights_bytes, weights_gib, max_model_len_lowered_from} (an EAGLE draft's,
         `kvcore.models.eagle_draft`: its layers are in groups, its weights in
         memory.weights_gib, the target's length it lowered, `draft_len`; null without one),
  multimodal: {vision_tower, limits, language_model_only, mm_encoder_tp_mode,
               vision_weights_bytes, vision_weights_gib} (vLLM's multimodal serving options'
              outcome, `kvcore.models.mm_serving`; null for a model without a vision tower).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kvcore.group_specs import UniformTypeKVCacheSpecs, kind_of
from kvcore.models.eagle_draft import is_draft_layer
from kvcore.models.int_quant_rank import unquantised_method
from kvcore.prefix_match import cache_hit_alignment, partial_hash_hits, resolve_block_sizes
from kvcore.sizing.config import GiB, blocks_per_request, vllm_tensor_count
from kvcore.sizing.packing import block_outermost
from kvcore.specs import (
    DTYPE_BYTES,
    AttentionSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
)


def page_formula(spec: KVCacheSpec) -> str:
    """The page size with the numbers put into it."""
    if isinstance(spec, UniformTypeKVCacheSpecs):
        parts = Counter(s.page_size_bytes for s in spec.kv_cache_specs.values())
        return " + ".join(f"{n} x {p}" for p, n in parts.items()) + f" = {spec.page_size_bytes}"
    if isinstance(spec, MLAAttentionSpec):
        # one latent vector a token: no factor 2 for K and V, the same on every TP rank
        text = (f"MLA: block {spec.block_size} x latent {spec.head_size} x "
                f"{DTYPE_BYTES[spec.dtype]} B ({spec.dtype}), no K/V pair, not split by TP = "
                f"{spec.real_page_size_bytes}")
    elif isinstance(spec, AttentionSpec) and spec.head_size_v is not None:
        # (values narrower than keys: MiMo-V2's, a page of K + V a head)
        text = (f"block {spec.block_size} x {spec.num_kv_heads} kv heads x (K {spec.head_size} "
                f"+ V {spec.head_size_v}) x {DTYPE_BYTES[spec.dtype]} B ({spec.dtype}) = "
                f"{spec.real_page_size_bytes}")
    elif isinstance(spec, AttentionSpec):
        text = (f"2 (K,V) x block {spec.block_size} x {spec.num_kv_heads} kv heads x head dim "
                f"{spec.head_size} x {DTYPE_BYTES[spec.dtype]} B ({spec.dtype}) = "
                f"{spec.real_page_size_bytes}")
    elif isinstance(spec, MambaSpec):
        terms = " + ".join(f"{'x'.join(map(str, s))} x {DTYPE_BYTES[d]} B"
                           for s, d in zip(spec.shapes, spec.dtypes))
        text = f"state {terms} = {spec.real_page_size_bytes}"
    else:
        return str(spec.page_size_bytes)
    if spec.page_size_bytes != getattr(spec, "real_page_size_bytes", spec.page_size_bytes):
        text += f", padded to {spec.page_size_bytes}"
    return text


def to_json(result: Any, *, gpu_memory_gib: float | None, gpu_memory_utilization: float,
            activation_gib: float, tp: int) -> dict[str, Any]:
    cfg, ctx, g, cap = result.config, result.ctx, result.geometry, result.capacity
    groups = []
    for i, grp in enumerate(cfg.kv_cache_groups):
        spec = grp.kv_cache_spec
        groups.append({"index": i, "kind": kind_of(spec), "block_size": spec.block_size,
                       "page_size_bytes": spec.page_size_bytes, "page_formula": page_formula(spec),
                       "layers": list(grp.layer_names), "num_layers": len(grp.layer_names),
                       "blocks_per_request": blocks_per_request(spec, ctx)})
    mem_given = gpu_memory_gib is not None
    return {
        "model": g.name, "source": g.source, "layers": g.num_layers,
        "layer_kinds": dict(Counter(g.layer_kinds)), "dtype": g.dtype,
        "kv_cache_dtype": result.kv_cache_dtype, "block_size": cfg.block_size,
        "max_model_len": ctx.max_model_len, "max_num_batched_tokens": ctx.max_num_batched_tokens,
        "max_in_flight_tokens": ctx.max_in_flight_tokens, "tensor_parallel_size": tp,
        "pipeline_parallel_size": max(1, len(result.stages)),
        "memory": {
            "gpu_memory_gib": gpu_memory_gib if mem_given else None,
            "gpu_memory_utilization": gpu_memory_utilization if mem_given else None,
            "weights_gib": result.weights_bytes / GiB if mem_given else None,
            "weights_estimated": result.weights_estimated if mem_given else None,
            # (a checkpoint whose quant_method's sizes kvcli does not model: counted in dtype)
            "weights_unquantised_method": unquantised_method(g) if mem_given
            and result.weights_estimated else None,
            # (RoPE caches, attention scales: `kvcore.sizing.buffers_term`; 0 with --weights-gib)
            "buffers_bytes": result.buffers_bytes if mem_given else None,
            "activation_gib": activation_gib if mem_given else None,
            "available_kv_cache_bytes": result.available_bytes,
            "available_kv_cache_gib": result.available_bytes / GiB,
        },
        "kv_cache_layout": "block_outermost" if block_outermost(g) else "layer_outer",
        "groups": groups, "bytes_per_block": cap.bytes_per_block, "num_blocks": cap.num_blocks,
        "num_tensors": vllm_tensor_count(list(cfg.kv_cache_groups)),
        "kv_cache_tokens": cap.kv_cache_tokens,
        "pool_tokens": max(cap.num_blocks - 1, 0) * cfg.block_size,
        "pool_tokens_by_group": [max(cap.num_blocks - 1, 0) * grp["block_size"]
                                 for grp in groups],
        "max_concurrency": cap.max_concurrency, "max_model_len_fits": cap.max_model_len_fits,
        "prefix_match": prefix_match_json(result),
        "stages": [st.to_dict() for st in result.stages],
        "draft": draft_json(result),
        "multimodal": multimodal_json(result, tp),
    }


def multimodal_json(result: Any, tp: int) -> dict[str, Any] | None:
    """The vision tower under vLLM's multimodal serving options, or None without one."""
    from kvcore.models.mm_serving import vision_rank_bytes

    mm = result.mm
    if mm is None or mm.tower == "none":
        return None
    vision = vision_rank_bytes(result.geometry, tp)
    return {"vision_tower": mm.tower, "limits": dict(mm.limits),
            "language_model_only": mm.language_model_only, "mm_encoder_tp_mode": mm.mode,
            "vision_weights_bytes": vision, "vision_weights_gib": vision / GiB}


def draft_json(result: Any) -> dict[str, Any] | None:
    """The EAGLE draft sized with the model, or None."""
    d = result.draft
    if d is None:
        return None
    g = d.geometry
    names = [n for grp in result.config.kv_cache_groups for n in grp.layer_names
             if is_draft_layer(n)]
    # (an MLA layer keeps one latent a token: vLLM's spec says 1 head of the latent's size)
    heads, dim = (1, g.mla.latent_size) if g.mla is not None else (g.num_kv_heads, g.head_dim)
    return {"model": d.name, "method": d.method, "architecture": d.architecture,
            "source": g.source, "layers": g.num_layers, "num_kv_heads": heads,
            "head_dim": dim, "layer_names": names,
            "weights_bytes": result.draft_weights_bytes,
            "weights_gib": result.draft_weights_bytes / GiB,
            # (the target's length before the draft lowered it: `draft_len`; None: not lowered)
            "max_model_len_lowered_from": limit.target if (limit := result.draft_limit)
            else None}


def prefix_match_json(result: Any) -> dict[str, Any]:
    """How vLLM hashes and where its hits land, with the given --prefix-match-unit."""
    specs = [g.kv_cache_spec for g in result.config.kv_cache_groups]
    unit, caching = result.prefix_match_unit, result.enable_prefix_caching
    scheduler, hash_bs = resolve_block_sizes(specs, unit, caching)
    return {"prefix_match_unit": unit, "scheduler_block_size": scheduler,
            "hash_block_size": hash_bs,
            "partial_hash_hits": partial_hash_hits(specs, hash_bs, caching),
            "cache_hit_alignment_tokens": cache_hit_alignment(specs, unit, caching)}

