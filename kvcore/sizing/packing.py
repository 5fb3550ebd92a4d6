"""Groups for a block-outermost KV cache layout (vLLM 0.33 `_get_packed_kv_cache_groups`,
v1/core/kv_cache_planning.py), the planner kvcli uses in place of `kvcore.sizing.grouping`'s
page-unified groups only where vLLM would.

Why only there: vLLM takes this path when the KV cache layout it resolves from the layers'
backends is block-outermost (BLHNC: every KV tensor strided by one whole pool block, each
group's page side by side inside it). Of the backends kvcli models only DeepSeek-V4's (FlashMLA
sparse, its sliding window, indexer and compressor backends) resolve to it; every other model
keeps the layer-outer layout (one page a layer position), whose pages must be unified.

The steps, in vLLM's order:

1. Layers are bucketed greedily in model order, each joining the first bucket it keeps of one
   type (same block size and token slots: `UniformTypeKVCacheSpecs`); a bucket's layers may
   differ in page.
2. A bucket is balanced when each of its page sizes has as many layers (a repeating pattern of
   one layer a page). The largest balanced bucket mixing pages sets a floor; the repeats a
   group covers are the d from that floor to the largest count of least round-up padding
   (`approximate_gcd`, ties to the larger d), and a balanced bucket splits into
   cdiv(count, d) groups taking every n-th repeat. An unbalanced bucket stays whole.
3. State buckets (Mamba, circular buffers, and sliding windows when nothing set d) split
   further so a group fits the block the other buckets already need.

The pool's block is then the widest group's page (`kvcore.sizing.config.bytes_per_block`).
"""

from __future__ import annotations

from collections import Counter

from kvcore.group_specs import UniformTypeKVCacheSpecs
from kvcore.models.geometry import ModelGeometry
from kvcore.specs import (
    CircularBufferSpec,
    KVCacheGroupSpec,
    KVCacheSpec,
    MambaSpec,
    SlidingWindowSpec,
    cdiv,
)


def block_outermost(g: ModelGeometry) -> bool:
    """Whether vLLM's layers of `g` resolve the block-outermost layout (DeepSeek-V4's backends
    alone, of those kvcli models: their KV tensors are strided by the whole pool block). Only
    the C4 layers' indexer backend declares it: a DeepSeek-V4 without one resolves vLLM's
    default, layer-outer (tests/data/deepseek_v4/README.md: vLLM then refuses its mixed pages,
    `deepseek_v4.unindexed_refused_layer`)."""
    v4 = g.v4
    return v4 is not None and any(map(v4.has_indexer, range(len(v4.compress_ratios))))


def approximate_gcd(values: list[int], lower_bound: int) -> int:
    """The d in [lower_bound, max(values)] whose round-up of every value to a multiple of d
    pads least; ties go to the larger d (vLLM's `_approximate_gcd`)."""
    low = max(1, lower_bound)
    best, best_pad = low, -1
    for d in range(low, max(values) + 1):
        pad = sum(-x % d for x in values)
        if best_pad < 0 or pad <= best_pad:
            best, best_pad = d, pad
    return best


def _buckets(specs: dict[str, KVCacheSpec]) -> list[dict[str, KVCacheSpec]]:
    out: list[dict[str, KVCacheSpec]] = []
    for name, spec in specs.items():
        for bucket in out:
            if UniformTypeKVCacheSpecs.from_specs({**bucket, name: spec}) is not None:
                bucket[name] = spec
                break
        else:
            out.append({name: spec})
    return out


def _most_per_page(bucket: dict[str, KVCacheSpec]) -> int:
    """The most layers sharing one page (a balanced bucket's repeats)."""
    return Counter(s.page_size_bytes for s in bucket.values()).most_common(1)[0][1]


def packed_groups(specs: dict[str, KVCacheSpec]) -> list[KVCacheGroupSpec] | None:
    """The groups of a block-outermost pool, None where every page is one size (the planner's
    other paths then group them)."""
    if len({s.page_size_bytes for s in specs.values()}) <= 1:
        return None
    buckets = []
    for bucket in _buckets(specs):
        by_page: dict[int, list[str]] = {}
        for name, s in bucket.items():
            by_page.setdefault(s.page_size_bytes, []).append(name)
        buckets.append((bucket, by_page, len({len(n) for n in by_page.values()}) == 1))
    floor = max((_most_per_page(b) for b, by_page, balanced in buckets
                 if balanced and len(by_page) > 1), default=0)
    repeats = (approximate_gcd([_most_per_page(b) for b, _, balanced in buckets if balanced],
                               floor) if floor else None)

    def n_groups(bucket: dict[str, KVCacheSpec], balanced: bool) -> int:
        return cdiv(_most_per_page(bucket), repeats) if balanced and repeats else 1

    def is_state(bucket: dict[str, KVCacheSpec]) -> bool:
        first = next(iter(bucket.values()))
        return isinstance(first, (MambaSpec, CircularBufferSpec)) or (
            repeats is None and isinstance(first, SlidingWindowSpec))

    # (the widest group any bucket must make, a state bucket cut to one layer a group)
    anchor = max(sum(cdiv(len(names), len(b) if is_state(b) else n_groups(b, balanced)) * page
                     for page, names in by_page.items()) for b, by_page, balanced in buckets)
    groups: list[KVCacheGroupSpec] = []
    for bucket, by_page, balanced in buckets:
        n = n_groups(bucket, balanced)
        if anchor and is_state(bucket):     # (a state group as wide as the block allows)
            per_block = max(anchor // next(iter(bucket.values())).page_size_bytes, 1)
            n = max(n, cdiv(len(bucket), per_block))
        if n == 1:
            groups.append(_group(bucket, list(bucket)))
            continue
        pattern = list(zip(*by_page.values()))      # (vLLM's: unbalanced tails dropped)
        for i in range(n):
            groups.append(_group(bucket, [name for rep in pattern[i::n] for name in rep]))
    return groups


def _group(bucket: dict[str, KVCacheSpec], names: list[str]) -> KVCacheGroupSpec:
    spec = UniformTypeKVCacheSpecs.from_specs({n: bucket[n] for n in names})
    assert spec is not None     # (a bucket's layers are of one type)
    return KVCacheGroupSpec(tuple(names), spec)
