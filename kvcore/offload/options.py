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
from kvcore.offload.settings import GEOMETRY, steps_time_transfers, tier_kv_dtype

# the groups vLLM's connector looks up and stores by its windowed rules (a Mamba group too, with
# a window of one chunk)
WINDOWED_KINDS = ("SlidingWindowSpec", "ChunkedLocalAttentionSpec")
# (built here, not in the compiled tier.py: mypyc cannot compile a starred tuple in an `in`)
WINDOWED_OR_MAMBA = (*WINDOWED_KINDS, "MambaSpec")


def offload_config(opts: Any, groups: list) -> OffloadConfig | None:
    """``groups``: rank 0's KV cache groups, those vLLM's scheduler plans with
    (`generate_scheduler_kv_cache_config`): with a model's pipeline stages the first stage's
    (`SizingResult.rank0_groups`), else the replay's; with a model (`model`, `model_config`) a
    rank's bytes per block are its group's (page bytes x layers), else the geometry options' (a
    rank's geometry); a chunk holds every rank's copy (``opts.tp`` x pipeline stages), or one of
    an MLA latent without pipeline parallelism (`tier_copies`)."""
    if not opts.offloading:
        return None
    if opts.kv_offloading_size is not None and opts.kv_offloading_size_chunks is not None:
        raise InputError("give the CPU tier's size once: in GiB or in chunks, not both",
                         field="kv_offloading_size_chunks")
    sizes = sorted({g.kv_cache_spec.block_size for g in groups})
    chunk_in_tokens_refusal(opts, groups)
    bs = tier_block_size(opts, groups)
    bpc = blocks_per_chunk_of(opts.offload_block_size, bs)
    if opts.model or opts.model_config:
        given = sorted(set(GEOMETRY) & set(opts.given or ()))
        if given:
            raise InputError("the model gives the KV geometry; leave this out", field=given[0])
        # vLLM's worker_kv_bytes_per_block: the KV cache tensor's size over its blocks
        # (offloading/config.py:175-185), the groups aliasing from byte 0: one block id's
        # bytes, the widest group's layers (gpt-oss-20b: 393,216, not its two groups' 786,432;
        # 5,461 chunks in 2 GiB, as `kvcli config` says); a copied block is one group's
        # layers, unpadded (`copy_bytes_per_block`)
        from kvcore.sizing.config import bytes_per_block, group_bytes_per_block

        block_bytes = bytes_per_block(groups)
        group_copy = tuple(copy_bytes_per_block(g) for g in groups)
        # the sync-load budget's rate is not that block: vLLM sums each offloaded group's
        # block over its own tokens (`offloading/scheduler.py:326-330`; every group here)
        per_token = sum(group_bytes_per_block(g) // g.kv_cache_spec.block_size
                        for g in groups)
    else:
        # (a trace's `groups`, each with the geometry's layers: as the oracle's harness builds
        # them, with no KV cache tensor, vLLM sums the groups' bytes, 173-189)
        copy_bytes = kv_bytes_per_block(bs, opts.num_layers, opts.num_kv_heads,
                                        opts.head_size, tier_kv_dtype(opts))
        block_bytes = copy_bytes * len(groups)
        per_token = sum(copy_bytes // g.kv_cache_spec.block_size for g in groups)
        # (no layers of their own to count: every group copies the geometry's block, as the
        # harness's groups do)
        group_copy = (copy_bytes,) * len(groups)
    copies = tier_copies(opts.tp, any(_is_mla(g) for g in groups), opts.pipeline_parallel_size)
    per_chunk = chunk_bytes(block_bytes * copies, bpc)
    if opts.kv_offloading_size_chunks is not None:
        gib = gib_of_chunks(opts.kv_offloading_size_chunks, per_chunk)
    else:
        gib = float(opts.kv_offloading_size)
    return OffloadConfig(
        # (groups of several block sizes: each its own chunk, `HybridConnector.tpcs`; the
        # first group's is the one reported, as vLLM's first GroupOffloadConfig)
        num_chunks=chunks_of(gib, per_chunk), blocks_per_chunk=bpc,
        block_size=bs if len(sizes) == 1 else groups[0].kv_cache_spec.block_size,
        kv_bytes_per_block=block_bytes, kv_bytes_per_token=per_token, gib=gib, policy=opts.eviction_policy,
        prompt_only=opts.offload_prompt_only, store_threshold=opts.store_threshold,
        sync_load_budget_bytes=opts.sync_load_budget_bytes, load_steps=opts.load_steps,
        store_steps=opts.store_steps, bandwidth=_bandwidth(opts), copies=copies,
        group_copy_bytes=group_copy, eagle_groups=_eagle_groups(opts, groups))


def chunk_in_tokens_refusal(opts: Any, groups: list) -> None:
    """A chunk in tokens (`offload_block_size`) is one block count for every group: over
    groups of several block sizes vLLM's connector asserts (`offloading/config.py:140-146`,
    whatever the size), when the workers build it, before the Scheduler's KV cache manager
    (whose retention checks come later; checked against vLLM: tests/data/offload_mixed).
    Without it each group's chunk is one of its own blocks."""
    sizes = sorted({g.kv_cache_spec.block_size for g in groups})
    if opts.offloading and opts.offload_block_size is not None and len(sizes) > 1:
        raise InputError(f"over KV cache groups of several block sizes ("
                         f"{', '.join(map(str, sizes))} tokens) vLLM 0.33 fails to start: "
                         "\"If 'block_size' is specified in kv_connector_extra_config, there "
                         "must be at least one KV cache group, and all groups must have the "
                         "same block size.\"", field="offload_block_size")


def _eagle_groups(opts: Any, groups: list) -> tuple[int, ...]:
    """The groups vLLM's connector flags `is_eagle_group` (offloading/scheduler.py:208-212):
    those the KV cache config flags, whatever the hash mode (none flagged is no fallback to
    every group there, unlike the GPU block drop's)."""
    if not opts.num_speculative_tokens:
        return ()
    from kvcore.engine.spec_decode import eagle_group_ids

    return eagle_group_ids(opts, groups)


def copy_bytes_per_block(group: Any) -> int:
    """The bytes a transfer moves for one of ``group``'s GPU blocks: each of its layers' page
    unpadded, as vLLM's worker counts a copy (`v1/kv_offload/cpu/gpu_worker.py:424-446`: one
    ref a layer, `page_size_bytes` the layer's unpadded page, `offloading/worker.py:121-129`):
    not the widest group's block id (jamba-v0.1's Mamba groups move 4 x 311,296 = 1,245,184
    bytes a block, not the 1,310,720 of their padded pages; gemma-3-27b's 8-layer sliding
    groups 8 x 131,072, not its 10-layer full group's 1,310,720)."""
    spec = group.kv_cache_spec
    per_layer = getattr(spec, "kv_cache_specs", None)     # UniformTypeKVCacheSpecs
    if per_layer is not None:
        return sum(per_layer[n].real_page_size_bytes for n in group.layer_names)
    return spec.real_page_size_bytes * len(group.layer_names)


def tier_block_size(opts: Any, groups: list) -> int:
    """The GPU block a chunk is made of: vLLM's `tokens_per_block`, the group's own block
    (`offloading/config.py:106-109`), not `--block-size`. They differ where vLLM bumps the block
    to a Mamba state's page (jamba-v0.1: 80 tokens, Qwen3-Next: 576, Nemotron-Nano-9B-v2:
    1,312, all groups alike): the chunk is that block (one a chunk unless `offload_block_size`
    says more, a multiple of it). Over groups of several block sizes each group's chunk is its
    own block (`HybridConnector.tpcs`) and this is the bytes' block, `--block-size`."""
    sizes = {g.kv_cache_spec.block_size for g in groups}
    return sizes.pop() if len(sizes) == 1 else opts.block_size


def sync_budget_note(opts: Any, cfg: OffloadConfig, where: str = "",
                     tail_unit: int = 0, chunk_tokens: int = 0) -> str | None:
    """The warning for a `sync_load_budget_bytes` under the least load's bytes, or None: a load
    is a chunk at least (a hit shorter than a chunk is none: `connector.OffloadingConnector.
    _lookup`, `hybrid_lookup.lookup`), or with partial tails (``tail_unit``, the hash block:
    `hybrid_partial`) one hash block, so none fits the budget and every load stays
    asynchronous, as with 0, unsaid. (Cache mode says the option is unread there.) ``where``:
    the mark of the trace's config line when it set the budget (`refusal.where_set`).
    ``chunk_tokens``: the least hit over groups of several block sizes (`least_hit_tokens`);
    0: the tier's one chunk."""
    budget = cfg.sync_load_budget_bytes
    tokens = tail_unit or chunk_tokens or cfg.tokens_per_chunk
    least = tokens * cfg.kv_bytes_per_token       # (`_reserve_sync_load`'s sum)
    if opts.mode != "engine" or not budget or budget >= least:
        return None
    return (f"option sync_load_budget_bytes{where} has no effect: {budget:,} bytes is less than "
            f"the least load, {'a partial tail' if tail_unit else 'one chunk'}"
            f"{' of the largest group' if chunk_tokens and not tail_unit else ''} of {tokens:,} "
            f"tokens ({least:,} bytes): "
            "every load stays asynchronous")


def least_hit_tokens(groups: list) -> int:
    """The least hit vLLM loads over groups of several block sizes: every group's pass refuses
    a hit shorter than its own chunk (`offloading/scheduler.py`, the lookup's "less than a
    chunk, so skip"), so a hit is the largest group's chunk at least (each group's chunk is one
    of its own blocks: `chunk_in_tokens_refusal`). The budget charges it at the tier's bytes a
    token, the sum over the groups (`_reserve_sync_load`), not one chunk's bytes of each group.
    0 with one block size (the tier's chunk)."""
    sizes = {g.kv_cache_spec.block_size for g in groups}
    return max(sizes) if len(sizes) > 1 else 0


def _bandwidth(opts: Any) -> float | None:
    """Bytes per ms on the simulated clock; None where the step counts time the transfers."""
    return None if steps_time_transfers(opts) else opts.offload_bandwidth_gbps * 1e6


def _is_mla(group: Any) -> bool:
    return type(group.kv_cache_spec).__name__ == "MLAAttentionSpec"


def check_supported(groups: list, retention: int | None = 0, tokens_per_chunk: int = 0,
                    caching: bool = True) -> None:
    """What the tier does not model is refused, not run half-right. vLLM 0.33 offloads every
    prefix-cacheable group (`offloading/config.py:61-86`): full attention (an MLA group is one
    to the connector: `MLAAttentionSpec` is a `FullAttentionSpec`), sliding window, chunked
    local attention and align-mode Mamba groups are modelled (`hybrid.py`, `hybrid_mamba.py`),
    a Mamba group with its block dividing the chunk (checked against vLLM with blocks of 8-80
    tokens and the chunk one or two blocks: tests/data/offload_mamba, offload_mamba_partial),
    the hash block the block or finer (`--prefix-match-unit`: keys every hashes-per-chunk
    hashes, partial tails: `hybrid_partial.py`; checked with chunks of 1-4 blocks; the unit
    next to other windowed groups is refused at start-up, `kvcore.prefix_match`). With a
    windowed group a retention interval must be a multiple of the chunk (vLLM refuses to start
    otherwise: offloading/scheduler.py:296-310); dense retention (None) is modelled
    (`hybrid_stores.reachable_mask`; checked against vLLM: tests/data/offload_dense). A
    windowed group alone is modelled as beside others (checked against vLLM:
    tests/data/offload_windowed_alone). Groups of several block sizes are modelled, each its
    own chunk (checked against vLLM: tests/data/offload_mixed), with drafts and with a
    prefix-match unit too: nothing of vLLM refuses them over several sizes, and they need no
    rule beyond offload_mixed's and offload_spec's, each group by its own chunk (checked
    against vLLM: tests/data/offload_mixed_spec)."""
    windowed = [g for g in groups if type(g.kv_cache_spec).__name__ in WINDOWED_KINDS]
    mamba = [g for g in groups if type(g.kv_cache_spec).__name__ == "MambaSpec"]
    sizes = sorted({g.kv_cache_spec.block_size for g in groups})
    if len(sizes) > 1:
        # (each group's chunk is one of its own blocks: `offload_config` refused a chunk in
        # tokens)
        for g in [g for g in groups if g in mamba or g in windowed] if retention else ():
            bs = g.kv_cache_spec.block_size
            if retention % bs:
                raise InputError(f"must be a multiple of the CPU tier's {bs}-token chunk "
                                 "of each windowed KV cache group (vLLM refuses to start)",
                                 field="prefix_cache_retention_interval")
        if caching:
            # (the checks below are of one chunk; with caching off a Mamba block is
            # max_model_len, refused below as a block the chunk does not hold)
            tokens_per_chunk = 0
    for g in mamba:
        bs = g.kv_cache_spec.block_size
        if tokens_per_chunk and (tokens_per_chunk < bs or tokens_per_chunk % bs):
            raise InputError(f"the CPU tier is modelled over a Mamba group whose block divides "
                             f"the chunk, not a {bs}-token Mamba block with a "
                             f"{tokens_per_chunk}-token chunk", field="kv_offloading_size")
    if mamba and not caching:      # (after: a block the chunk cannot hold says so first)
        # (vLLM runs Mamba in "none" mode then: a block of max_model_len tokens, no copy-on-write
        # source, no alignment in the tier's lookups; the oracle cannot build it to check it)
        raise InputError("the CPU tier is modelled over align-mode Mamba groups (prefix caching "
                         "on), not a Mamba group with prefix caching off (vLLM's 'none' mode)",
                         field="enable_prefix_caching")
    if (windowed or mamba) and tokens_per_chunk and retention and retention % tokens_per_chunk:
        raise InputError(f"must be a multiple of the CPU tier's {tokens_per_chunk}-token chunk "
                         "with windowed KV cache groups (vLLM refuses to start)",
                         field="prefix_cache_retention_interval")
    modelled = ("FullAttentionSpec", "MLAAttentionSpec", *WINDOWED_OR_MAMBA)
    for g in groups:
        kind = type(g.kv_cache_spec).__name__
        if kind not in modelled:
            raise InputError(f"the CPU tier is not modelled with a {kind} KV cache group (vLLM "
                             "0.33 offloads every prefix-cacheable group)",
                             field="kv_offloading_size")
