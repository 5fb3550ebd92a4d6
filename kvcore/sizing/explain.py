"""Human-readable formulas and the JSON document for a `SizingResult` (used by `kvcli config`).

JSON keys (stable):
  model, source, layers (count), layer_kinds ({kind: count}), dtype, kv_cache_dtype,
  block_size (smallest group block size), max_model_len, max_num_batched_tokens,
  max_in_flight_tokens, tensor_parallel_size,
  memory: {gpu_memory_gib, gpu_memory_utilization, weights_gib, weights_estimated,
           activation_gib, available_kv_cache_bytes, available_kv_cache_gib} (null fields when
           --num-blocks was given without GPU memory),
  groups: [{index, kind, block_size, page_size_bytes, page_formula, layers: [names],
            num_layers, blocks_per_request}],
  bytes_per_block, num_blocks, num_tensors,
  kv_cache_tokens (vLLM 0.33's "GPU KV cache size": int(max_concurrency * max_model_len)),
  pool_tokens (num_blocks - 1 usable blocks x smallest block size),
  max_concurrency (requests at max_model_len at once), max_model_len_fits (the largest
  max_model_len whose one request fits, searched up to the model's max position embeddings).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kvcore.sizing.config import GiB, blocks_per_request
from kvcore.specs import (
    DTYPE_BYTES,
    AttentionSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    UniformTypeKVCacheSpecs,
    spec_kind,
)


def page_formula(spec: KVCacheSpec) -> str:
    """The page size with the numbers put into it."""
    if isinstance(spec, UniformTypeKVCacheSpecs):
        parts = Counter(s.page_size_bytes for s in spec.kv_cache_specs.values())
        return " + ".join(f"{n} x {p}" for p, n in parts.items()) + f" = {spec.page_size_bytes}"
    if isinstance(spec, MLAAttentionSpec):
        text = (f"block {spec.block_size} x {spec.num_kv_heads} x {spec.head_size} x "
                f"{DTYPE_BYTES[spec.dtype]} B ({spec.dtype}) = {spec.real_page_size_bytes}")
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
        groups.append({"index": i, "kind": spec_kind(spec), "block_size": spec.block_size,
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
        "memory": {
            "gpu_memory_gib": gpu_memory_gib if mem_given else None,
            "gpu_memory_utilization": gpu_memory_utilization if mem_given else None,
            "weights_gib": result.weights_bytes / GiB if mem_given else None,
            "weights_estimated": result.weights_estimated if mem_given else None,
            "activation_gib": activation_gib if mem_given else None,
            "available_kv_cache_bytes": result.available_bytes,
            "available_kv_cache_gib": result.available_bytes / GiB,
        },
        "groups": groups, "bytes_per_block": cap.bytes_per_block, "num_blocks": cap.num_blocks,
        "num_tensors": len(cfg.kv_cache_tensors), "kv_cache_tokens": cap.kv_cache_tokens,
        "pool_tokens": max(cap.num_blocks - 1, 0) * cfg.block_size,
        "max_concurrency": cap.max_concurrency, "max_model_len_fits": cap.max_model_len_fits,
    }


def _short_layers(names: list[str]) -> str:
    idx = [n.rsplit(".", 1)[-1] for n in names]
    return ",".join(idx) if len(idx) <= 8 else ",".join(idx[:6]) + f",... ({len(idx)})"


def sizing_view(result: Any, *, gpu_memory_gib: float | None, gpu_memory_utilization: float,
                activation_gib: float, tp: int):
    """The `View` of `kvcli config`: the JSON document and its tables."""
    from kvcli.output import Table, View

    data = to_json(result, gpu_memory_gib=gpu_memory_gib,
                   gpu_memory_utilization=gpu_memory_utilization, activation_gib=activation_gib,
                   tp=tp)
    rows = [(g["index"], g["kind"], g["block_size"], g["num_layers"], _short_layers(g["layers"]),
             g["page_size_bytes"], g["blocks_per_request"]) for g in data["groups"]]
    groups = Table(f"KV cache groups of {data['model']} ({data['layers']} layers: " + ", ".join(
        f"{n} {k}" for k, n in data["layer_kinds"].items()) + ")",
        ("group", "kind", "block", "layers", "which", "page bytes", "blocks/request"), rows)
    formulas: dict[str, list[int]] = {}
    for g in data["groups"]:
        formulas.setdefault(g["page_formula"], []).append(g["index"])
    text = [f"page, group{'s' if len(ids) > 1 else ''} {','.join(map(str, ids))}: {f}"
            for f, ids in formulas.items()]
    m = data["memory"]
    if m["gpu_memory_gib"] is not None:
        text.append(
            f"available KV memory = {m['gpu_memory_gib']:g} GiB x 2^30 x "
            f"{m['gpu_memory_utilization']:g} - weights {m['weights_gib']:.2f} GiB"
            + (" (estimated)" if m["weights_estimated"] else "")
            + (f" - activations {m['activation_gib']:g} GiB" if m["activation_gib"] else "")
            + f" = {m['available_kv_cache_bytes']:,} bytes ({m['available_kv_cache_gib']:.2f} GiB)"
            + (f" per worker (tensor parallel {tp})" if tp > 1 else ""))
    widest = max((g["num_layers"] for g in data["groups"]), default=0)
    text.append(f"bytes per block = {widest} layers x page = {data['bytes_per_block']:,}")
    text.append(f"num_blocks = {data['num_blocks']:,}"
                + ("" if m["gpu_memory_gib"] is None else
                   f" = {m['available_kv_cache_bytes']:,} // {data['bytes_per_block']:,}")
                + " (block 0 is the null block)")
    per_req = sum(g["blocks_per_request"] for g in data["groups"])
    text.append(f"max concurrency at max_model_len {data['max_model_len']:,} = "
                f"{data['num_blocks']:,} / {per_req:,} blocks per request = "
                f"{data['max_concurrency']:.2f}")
    text.append(f"KV cache capacity = {data['kv_cache_tokens']:,} tokens "
                f"(vLLM's 'GPU KV cache size'); pool = {data['pool_tokens']:,} token slots")
    text.append(f"largest max_model_len that fits = {data['max_model_len_fits']:,}")
    return View(data, tables=[groups], text=text)


def list_view():
    from kvcli.output import Table, View
    from kvcore.models.presets import PRESETS, load_preset

    rows, data = [], []
    for key, (repo, _) in PRESETS.items():
        g = load_preset(key)
        kinds = ", ".join(f"{n} {k}" for k, n in Counter(g.layer_kinds).items())
        rows.append((key, repo, g.num_layers, kinds, g.num_kv_heads, g.head_dim, g.dtype,
                     g.max_position_embeddings))
        data.append({"name": key, "repo": repo, "layers": g.num_layers,
                     "layer_kinds": dict(Counter(g.layer_kinds)), "kv_heads": g.num_kv_heads,
                     "head_dim": g.head_dim, "dtype": g.dtype,
                     "max_position_embeddings": g.max_position_embeddings})
    return View({"presets": data}, tables=[Table("model presets", (
        "name", "repo", "layers", "kinds", "kv heads", "head dim", "dtype", "max len"), rows)])
