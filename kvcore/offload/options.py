"""The CPU tier's `OffloadConfig` from a replay's options (`kvcore.engine.options`): None when
offloading is off; bad combinations are `InputError`s naming the option."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.offload.config import (
    OffloadConfig,
    blocks_per_chunk_of,
    chunk_bytes,
    chunks_of,
    gib_of_chunks,
    kv_bytes_per_block,
    tier_copies,
)

GEOMETRY = ("num_layers", "num_kv_heads", "head_size", "kv_dtype")


def offload_config(opts: Any, groups: list) -> OffloadConfig | None:
    """``groups``: the replay's KV cache groups; with a model (`model`, `model_config`) a rank's
    bytes per block are its group's (page bytes x layers), else the geometry options' (a rank's
    geometry); a chunk holds ``opts.tp`` ranks' copies, or one of an MLA latent
    (`tier_copies`)."""
    if not opts.offloading:
        return None
    if opts.kv_offloading_size is not None and opts.kv_offloading_size_chunks is not None:
        raise InputError("give the CPU tier's size once: in GiB or in chunks, not both",
                         field="kv_offloading_size_chunks")
    bs = opts.block_size
    bpc = blocks_per_chunk_of(opts.offload_block_size, bs)
    if opts.model or opts.model_config:
        given = sorted(set(GEOMETRY) & set(opts.given or ()))
        if given:
            raise InputError("the model gives the KV geometry; leave this out", field=given[0])
        block_bytes = sum(g.kv_cache_spec.page_size_bytes * len(g.layer_names) for g in groups)
    else:
        block_bytes = kv_bytes_per_block(bs, opts.num_layers, opts.num_kv_heads,
                                         opts.head_size, opts.kv_dtype)
    copies = tier_copies(opts.tp, any(_is_mla(g) for g in groups))
    per_chunk = chunk_bytes(block_bytes * copies, bpc)
    if opts.kv_offloading_size_chunks is not None:
        gib = gib_of_chunks(opts.kv_offloading_size_chunks, per_chunk)
    else:
        gib = float(opts.kv_offloading_size)
    return OffloadConfig(
        num_chunks=chunks_of(gib, per_chunk), block_size=bs, blocks_per_chunk=bpc,
        kv_bytes_per_block=block_bytes, gib=gib, policy=opts.eviction_policy,
        prompt_only=opts.offload_prompt_only, store_threshold=opts.store_threshold,
        sync_load_budget_bytes=opts.sync_load_budget_bytes, load_steps=opts.load_steps,
        store_steps=opts.store_steps, bandwidth=_bandwidth(opts), copies=copies)


def unused_tier_options(opts: Any) -> str | None:
    """The warning for the tier's options given without a tier (they were dropped from the
    config without a word), or None."""
    from kvcore.engine.options import OFFLOAD_FIELDS

    sizes = {"kv_offloading_size", "kv_offloading_size_chunks"}
    given = sorted((opts.given or frozenset()) & (set(OFFLOAD_FIELDS) - sizes))
    if not given or opts.offloading:
        return None
    return (f"option(s) {', '.join(given)}: no effect without a CPU tier (kv_offloading_size "
            "or kv_offloading_size_chunks)")


def _bandwidth(opts: Any) -> float | None:
    """Bytes per ms on the simulated clock; None (fixed step counts) under arrivals=step or
    when the step counts were given."""
    given = opts.given or frozenset()
    if opts.arrivals == "step" or "load_steps" in given or "store_steps" in given:
        return None
    return opts.offload_bandwidth_gbps * 1e6


def _is_mla(group: Any) -> bool:
    return type(group.kv_cache_spec).__name__ == "MLAAttentionSpec"


def check_supported(opts: Any, groups: list) -> None:
    """What the tier does not model yet is refused, not run half-right. An MLA group is a
    full-attention group to vLLM's connector (`MLAAttentionSpec` is a `FullAttentionSpec`: no
    window, every chunk kept)."""
    full = ("FullAttentionSpec", "MLAAttentionSpec")
    if len(groups) != 1 or type(groups[0].kv_cache_spec).__name__ not in full:
        raise InputError("the CPU tier is modelled for one full-attention KV cache group "
                         "(as vLLM's oracle runs it)", field="kv_offloading_size")
