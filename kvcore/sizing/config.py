"""From groups and a memory budget to a `KVCacheConfig`, and the figures vLLM logs about it.

vLLM 0.33 `kv_cache_planning.py` / `kv_cache_utils.py` in words:

* bytes per block = the largest group's sum of per-layer pages (every group draws block ids from
  one pool, so one block id costs a page in each layer position);
* ``num_blocks = available // bytes_per_block`` (or the override), block 0 being the null block;
* one tensor per layer position i, ``page * num_blocks`` bytes, shared by the i-th layer of every
  group that has one (a ``UniformTypeKVCacheSpecs`` group: one tensor per layer);
* the memory check plans against ``available - bytes_per_block`` (the null block is held back)
  and a request needs ``bytes_per_block * sum_g cdiv(max_mem_g, page_g)``;
* max concurrency = ``num_blocks / sum_g cdiv(max_mem_g, page_g)``; capacity in tokens =
  ``int(max_concurrency * max_model_len)``.
"""

from __future__ import annotations

from typing import NamedTuple

from kvcore.group_specs import UniformTypeKVCacheSpecs
from kvcore.specs import (
    KVCacheConfig,
    KVCacheGroupSpec,
    KVCacheSpec,
    KVCacheTensor,
    SizingContext,
    cdiv,
)

GiB = 1 << 30


class NotEnoughMemory(ValueError):
    """One request at max_model_len does not fit; carries the numbers for the message."""

    def __init__(self, needed: int, available: int, max_model_len: int, fits: int,
                 per_block: int = 0) -> None:
        self.needed, self.available = needed, available
        self.max_model_len, self.fits = max_model_len, fits
        hint = (f"the largest max_model_len that fits is {fits}" if fits > 0
                else "not even one token fits")

        def size(n: int) -> str:
            return f"{n / GiB:.2f} GiB" + (f" ({n // per_block} blocks)" if per_block else "")
        super().__init__(
            f"one request at max_model_len {max_model_len} needs {size(needed)} of KV cache, "
            f"available {size(available)} (short by {(needed - available) / GiB:.2f} GiB); "
            f"{hint}")


def _layer_pages(group: KVCacheGroupSpec) -> list[tuple[str, int]]:
    spec = group.kv_cache_spec
    if isinstance(spec, UniformTypeKVCacheSpecs):
        return [(n, spec.kv_cache_specs[n].page_size_bytes) for n in group.layer_names]
    return [(n, spec.page_size_bytes) for n in group.layer_names]


def group_bytes_per_block(group: KVCacheGroupSpec) -> int:
    """One group's block: the sum of its layers' pages (vLLM's `_group_kv_bytes_per_block`)."""
    return sum(p for _, p in _layer_pages(group))


def bytes_per_block(groups: list[KVCacheGroupSpec]) -> int:
    """Bytes one block id costs across the pool: the largest group's sum of per-layer pages
    (the groups alias one allocation from byte 0)."""
    return max((group_bytes_per_block(g) for g in groups), default=0)


def blocks_per_request(spec: KVCacheSpec, ctx: SizingContext) -> int:
    """Blocks one request at ``ctx.max_model_len`` can hold in a group with this spec."""
    if isinstance(spec, UniformTypeKVCacheSpecs):
        return spec.max_memory_usage_pages(ctx)
    return cdiv(spec.max_memory_usage_bytes(ctx), spec.page_size_bytes)


def request_bytes(groups: list[KVCacheGroupSpec], ctx: SizingContext) -> int:
    """0.33's per-request need: bytes per block times the blocks a request holds in all groups
    (this counts the padding layers of a short group)."""
    return bytes_per_block(groups) * sum(blocks_per_request(g.kv_cache_spec, ctx) for g in groups)


def max_concurrency(groups: list[KVCacheGroupSpec], num_blocks: int, ctx: SizingContext) -> float:
    """How many requests at max_model_len fit at once (as vLLM 0.33 logs it)."""
    need = sum(blocks_per_request(g.kv_cache_spec, ctx) for g in groups)
    return num_blocks / need if need else float("inf")


def kv_cache_tokens(groups: list[KVCacheGroupSpec], num_blocks: int, ctx: SizingContext) -> int:
    """vLLM 0.33's logged "GPU KV cache size: N tokens"."""
    return int(max_concurrency(groups, num_blocks, ctx) * ctx.max_model_len)


def _largest_fitting_len(fits, upper: int) -> int:
    """Binary search over [1, upper] for the largest length with fits(n); 0 when 1 does not."""
    if not fits(1):
        return 0
    lo, hi, best = 1, upper, 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(mid):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


def estimate_max_model_len(specs: dict[str, KVCacheSpec], ctx: SizingContext,
                           available: int) -> int:
    """vLLM's ``estimate_max_model_len``: the largest length in [1, ctx.max_model_len] whose summed
    per-layer ``max_memory_usage_bytes`` fits in ``available`` (0 if one token does not)."""
    def fits(n: int) -> bool:
        c = ctx.with_max_model_len(n)
        return sum(s.max_memory_usage_bytes(c) for s in specs.values()) <= available
    return _largest_fitting_len(fits, ctx.max_model_len)


def estimate_max_model_len_from_groups(groups: list[KVCacheGroupSpec], ctx: SizingContext,
                                       available: int, upper: int | None = None) -> int:
    """0.33's group-aware estimate (padding layers counted), searched over [1, upper]."""
    return _largest_fitting_len(
        lambda n: request_bytes(groups, ctx.with_max_model_len(n)) <= available,
        upper if upper is not None else ctx.max_model_len)


def check_enough_memory(groups: list[KVCacheGroupSpec], ctx: SizingContext,
                        available: int) -> None:
    """Raise NotEnoughMemory unless one request at max_model_len fits (null block held back)."""
    if not groups:
        return
    usable = available - bytes_per_block(groups)
    if available <= 0 or usable <= 0:
        raise NotEnoughMemory(request_bytes(groups, ctx), max(usable, 0), ctx.max_model_len, 0,
                              bytes_per_block(groups))
    needed = request_bytes(groups, ctx)
    if needed > usable:
        fits = estimate_max_model_len_from_groups(groups, ctx, usable)
        raise NotEnoughMemory(needed, usable, ctx.max_model_len, fits, bytes_per_block(groups))


def kv_cache_config_from_groups(groups: list[KVCacheGroupSpec], available: int,
                                num_blocks_override: int | None = None) -> KVCacheConfig:
    """``num_blocks`` and the tensors for these groups and this many bytes."""
    if not groups:
        # Attention-free: the pool still needs its null block.
        return KVCacheConfig(1, (), ())
    per_block = bytes_per_block(groups)
    num_blocks = max(available // per_block, 0)
    if num_blocks_override is not None:
        num_blocks = num_blocks_override
    if len(groups) == 1 and isinstance(groups[0].kv_cache_spec, UniformTypeKVCacheSpecs):
        tensors = [KVCacheTensor(page * num_blocks, (name,))
                   for name, page in _layer_pages(groups[0])]
    else:
        pages = [_layer_pages(g) for g in groups]
        depth = max(len(p) for p in pages)
        tensors = []
        for i in range(depth):
            sharing = [p[i] for p in pages if i < len(p)]
            tensors.append(KVCacheTensor(max(pg for _, pg in sharing) * num_blocks,
                                         tuple(n for n, _ in sharing)))
    return KVCacheConfig(num_blocks, tuple(tensors), tuple(groups))


def vllm_tensor_count(groups: list[KVCacheGroupSpec]) -> int:
    """How many KV cache tensors vLLM 0.33's planner makes (`kv_cache_planning.py`): one a
    group and distinct layer spec, each as large as the whole pool, the groups aliasing from
    byte 0 (kvcore's `kv_cache_tensors` describe the same bytes one layer at a time, the layout
    vLLM had before)."""
    n = 0
    for g in groups:
        spec = g.kv_cache_spec
        if isinstance(spec, UniformTypeKVCacheSpecs):
            n += len(set(spec.kv_cache_specs.values()))
        elif g.layer_names:
            n += 1
    return n


class Capacity(NamedTuple):
    num_blocks: int
    bytes_per_block: int
    kv_cache_tokens: int
    max_concurrency: float
    max_model_len_fits: int


def capacity(config: KVCacheConfig, ctx: SizingContext, available: int,
             search_upper: int) -> Capacity:
    """The figures `kvcli config` prints for a finished config."""
    groups = list(config.kv_cache_groups)
    per_block = bytes_per_block(groups)
    # With an override, vLLM plans against the memory the override actually allocates.
    budget = config.num_blocks * per_block if per_block else available
    fits = (estimate_max_model_len_from_groups(groups, ctx, budget - per_block, search_upper)
            if groups else search_upper)
    return Capacity(config.num_blocks, per_block, kv_cache_tokens(groups, config.num_blocks, ctx),
                    max_concurrency(groups, config.num_blocks, ctx), fits)
