"""How layers become KV cache groups (vLLM 0.33 `get_kv_cache_groups`).

A group is a set of layers that share one block table and one manager. Steps, in order:

1. ``disable_hybrid``: sliding-window / chunked-local layers next to full attention become
   full attention that remembers its window (memory for every token, windowed compute).
2. No layers: no groups (attention-free model).
3. Every layer merges into one spec: one group with all layers.
4. All layers of one kind (same token slots) but different sizes: one group with a
   ``UniformTypeKVCacheSpecs`` (a block costs the sum of the member pages).
5. Otherwise unify page sizes (raise smaller layers' block sizes by the ratio; Mamba pages are
   padded), then bucket layers by spec and cut each bucket into groups of ``group_size`` layers,
   ``group_size`` being the smallest bucket unless the largest is under 1.5x of it. An MLA page
   that cannot be unified tries vLLM's full-allocation fallback first
   (`kvcore.sizing.full_allocation`).

kvcore models the layer-outer tensor layout (one buffer per layer position, shared across
groups). Where vLLM 0.33's layout is block-outermost (DeepSeek-V4's backends) it packs mixed
page sizes instead, before step 5: `kvcore.sizing.packing` (``block_outermost``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from kvcore.group_specs import UniformTypeKVCacheSpecs
from kvcore.sizing.full_allocation import full_allocation_groups, promote_local_specs
from kvcore.sizing.packing import packed_groups
from kvcore.specs import (
    AttentionSpec,
    KVCacheGroupSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    cdiv,
)

# 0.33's threshold (v0.13 used 1.25): when the largest bucket is under 1.5x the smallest, pad
# the smaller buckets up to the largest instead of splitting the largest.
GROUP_SIZE_PAD_RATIO = 1.5


# vLLM 0.33's own warnings as it plans (kv_cache_planning.py's logger.warning, word for word,
# its missing full stop after "model," kept): a caller's `warn` gets each as it happens
Warn = Callable[[str], None] | None
HYBRID_DISABLED_WORDS = (
    "Hybrid KV cache manager is disabled for this hybrid model, This means we do not enable "
    "any optimizations for saving KV cache memory (e.g., dropping the KV cache outside the "
    "sliding window). The compute of layers like sliding window is still saved.")
FALLBACK_WORDS = (
    "KV cache page sizes cannot be unified; treating sliding-window layers as full attention "
    "for cache allocation. Sliding-window attention compute is unchanged.")


def padding_words(padding: int, layers: int) -> str:
    """vLLM's warning where a kind's `layers` leave its last group `padding` layers short."""
    return (f"Add {padding} padding layers, may waste at most {padding / layers * 100:.2f}% KV "
            "cache memory")


class UnifyError(ValueError):
    """--disable-hybrid-kv-cache-manager on layers that cannot be one kind (vLLM's refusal):
    the option to drop, not the model, is what a message names."""


class PageSizeError(ValueError):
    """Page sizes that cannot be unified by raising block sizes."""


class UnpaddablePageError(PageSizeError):
    """A page vLLM 0.33 can neither raise nor pad (its NotImplementedError: an MLA page)."""


def is_kv_cache_spec_uniform(specs: dict[str, KVCacheSpec]) -> bool:
    """Whether every layer merges into one spec (full with and without a window count as one).

    Like vLLM, only an AssertionError means "not uniform"; a ValueError (two different windows on
    full-attention layers) propagates.
    """
    if not specs:
        return True
    values = list(specs.values())
    try:
        values[0].merge(values)
    except AssertionError:
        return False
    return True


def unify_hybrid_kv_cache_specs(specs: dict[str, KVCacheSpec],
                                warn: Warn = None) -> dict[str, KVCacheSpec]:
    """--disable-hybrid-kv-cache-manager: local layers next to full ones become full layers
    (`kvcore.sizing.full_allocation.promote_local_specs`), with vLLM's warning."""
    if is_kv_cache_spec_uniform(specs) or UniformTypeKVCacheSpecs.from_specs(specs) is not None:
        return specs
    out = promote_local_specs(specs)
    if out != specs and warn is not None:
        warn(HYBRID_DISABLED_WORDS)
    if not (is_kv_cache_spec_uniform(out) or UniformTypeKVCacheSpecs.from_specs(out)):
        raise UnifyError("Hybrid KV cache manager is disabled but the layers could not be "
                         "unified into one type.")
    return out


def unpaddable_page_words(layer: str) -> str:
    """vLLM 0.33's words where layer `layer`'s page does not divide the largest and cannot be
    padded (an MLA page; `unify_kv_cache_spec_page_size`'s NotImplementedError)."""
    return (f"Layer {layer}: page size is not divisible by the maximum page size and cannot be "
            "padded. Padding is only supported for non-MLA attention layers.")


def unify_kv_cache_spec_page_size(specs: dict[str, KVCacheSpec], *,
                                  pad_pages: bool = True) -> dict[str, KVCacheSpec]:
    """Give every layer the largest page size, as vLLM 0.33 does.

    A smaller attention page that divides the largest gets a block size ``ratio`` times larger
    (head 64 next to head 32 with block 16: the head-32 layers get block 32). Mamba pages are
    padded (their size does not scale with block size), and so is a non-MLA attention page that
    does not divide (vLLM reads it through a strided view). An MLA page that does not divide
    cannot be padded (sparse MLA indexes whole token rows): ``PageSizeError`` in vLLM's words.
    ``pad_pages=False`` is vLLM 0.13's rule (kvcli's ``--no-pad-pages``): no attention page
    padded, a ``PageSizeError`` saying by how much.
    """
    pages = {s.page_size_bytes for s in specs.values()}
    if len(pages) <= 1:
        return specs
    max_page = max(pages)
    out: dict[str, KVCacheSpec] = {}
    for name, s in specs.items():
        page = s.page_size_bytes
        if page == max_page:
            out[name] = s
        elif isinstance(s, MambaSpec):
            out[name] = replace(s, page_size_padded=max_page)
        elif max_page % page == 0:
            out[name] = s.copy_with_new_block_size(s.block_size * (max_page // page))
        elif not isinstance(s, AttentionSpec) or isinstance(s, MLAAttentionSpec):
            raise UnpaddablePageError(unpaddable_page_words(name))
        elif pad_pages:
            out[name] = replace(s, page_size_padded=max_page)
        else:
            raise PageSizeError(
                f"layer {name}: page size {page} bytes does not divide the largest page size "
                f"{max_page} bytes (ratio {max_page / page:.3g}), so its block size cannot be "
                f"raised to match (--no-pad-pages: vLLM 0.13's rule; vLLM 0.33 pads the page "
                f"to {max_page} bytes, wasting {max_page - page} bytes a block)")
    return out


def _group_size(bucket_sizes: list[int]) -> int:
    smallest, largest = min(bucket_sizes), max(bucket_sizes)
    return largest if largest < smallest * GROUP_SIZE_PAD_RATIO else smallest


def group_uniform_page_size(specs: dict[str, KVCacheSpec],
                            warn: Warn = None) -> list[KVCacheGroupSpec]:
    """Bucket layers by spec (first-seen order), merge mergeable buckets, cut into groups.

    A bucket of n layers becomes cdiv(n, group_size) groups; group i takes layers[i::num_groups]
    (strided, so pipeline stages stay balanced). 30 SWA + 6 full: group_size 6, 1 full group and
    5 SWA groups. 3 full + 7 SWA: [1,2,3], [4,7,10], [5,8], [6,9].
    """
    same: dict[KVCacheSpec, list[str]] = {}
    for name, s in specs.items():
        same.setdefault(s, []).append(name)
    buckets: list[tuple[list[str], list[KVCacheSpec]]] = []
    for s, names in same.items():
        for b_names, b_specs in buckets:
            try:
                type(b_specs[0]).merge([*b_specs, s])
            except (AssertionError, ValueError):
                continue
            b_names.extend(names)
            b_specs.append(s)
            break
        else:
            buckets.append((list(names), [s]))
    size = _group_size([len(names) for names, _ in buckets])
    grouped: list[list[str]] = []
    for names, _ in buckets:
        if len(names) % size and warn is not None:
            warn(padding_words(size - len(names) % size, len(names)))
        n_groups = cdiv(len(names), size)
        grouped.extend(names[i::n_groups] for i in range(n_groups))
    return [_make_group(specs, names) for names in grouped]


def _make_group(specs: dict[str, KVCacheSpec], names: list[str]) -> KVCacheGroupSpec:
    layer_specs = [specs[n] for n in names]
    return KVCacheGroupSpec(tuple(names), layer_specs[0].merge(layer_specs))


def get_kv_cache_groups(specs: dict[str, KVCacheSpec], *, disable_hybrid: bool = False,
                        pad_pages: bool = True,
                        block_outermost: bool = False,
                        warn: Warn = None) -> list[KVCacheGroupSpec]:
    """Layer name -> spec (in model order) to the list of KV cache groups. ``block_outermost``:
    the layers' backends resolve vLLM's block-outermost layout (`kvcore.sizing.packing`);
    `warn` gets vLLM's planning warnings, in its order."""
    if disable_hybrid:
        specs = unify_hybrid_kv_cache_specs(specs, warn)
    if not specs:
        return []
    if is_kv_cache_spec_uniform(specs):
        return [_make_group(specs, list(specs))]
    uniform = UniformTypeKVCacheSpecs.from_specs(specs)
    if uniform is not None:
        return [KVCacheGroupSpec(tuple(specs), uniform)]
    if block_outermost and (packed := packed_groups(specs)):
        return packed
    try:
        unified = unify_kv_cache_spec_page_size(specs, pad_pages=pad_pages)
    except UnpaddablePageError:
        # (vLLM 0.33 tries full attention's memory for the sliding layers before it fails)
        fallback = full_allocation_groups(specs)
        if fallback is None:
            raise
        if warn is not None:
            warn(FALLBACK_WORDS)
        return fallback
    return group_uniform_page_size(unified, warn)
