"""vLLM 0.33's `--prefix-match-unit N` (CacheConfig.prefix_match_unit) at start-up: the block
size requests are hashed at, and whether hits may land inside a Mamba block.

vLLM (`kv_cache_utils.resolve_kv_cache_block_sizes`, `partial_hash_hits_enabled`,
`resolve_cache_hit_alignment_tokens`; `mamba/abstract.get_mamba_prefill_checkpoint_grid`):

* one KV cache group: the hash block is the block; any other unit is refused while prefix
  caching is on;
* several groups: the scheduler block is the lcm of the groups' blocks; with prefix caching off
  the hash block is the scheduler block (the unit is ignored); else the unit, or the gcd of the
  prefix-cacheable groups' blocks, which every one of them must be a multiple of (refused
  otherwise);
* partial hash hits: some Mamba group (align mode) has a block larger than the hash block, and
  every other prefix-cacheable group's manager looks up at hash granularity (full attention and
  Mamba do; sliding window, chunked local and cross-attention do not, unless their block is
  the hash block);
  then hits land on the hash block (`cache_hit_alignment_tokens`), else on the scheduler block;
* a Gated DeltaNet layer's prefill checkpoints sit on lcm(unit, its kernel's alignment), the
  Mamba block without a unit. The block sizes themselves do not change.

A replay models what a unit finer than a block changes, as vLLM 0.33 does, over full
attention, sliding windows, chunked local and Mamba groups: partial hash hits on (every window
at the hash block, a chunked local group there too: tests/data/sched_mamba_window_pmu/,
sched_chunked_mamba/) or off beside Mamba groups (tests/data/sched_mamba_mixed_pmu/; a chunked
local group at the lcm: sched_chunked_mamba/ cxN), and without a Mamba group, where the unit is
only the hash block (tests/data/sched_mixed_pmu/; a chunked local group at the lcm:
sched_chunked_pmu/); with the CPU tier too (tests/data/offload_mixed_pmu/,
offload_chunked_pmu/). A chunked local group off the hit alignment fails at vLLM's first
lookup (`kvcore.engine.first_lookup`). `unmodelled` refuses the rest in one line. What it
takes: a block under several keys in the pool (`kvcore.partial_hashes`:
`BlockPool.cache_partial_block` / `move_block_hashes` / `_remove_cached_block_hashes`,
`block_hash_num_tokens`, each key removed and announced on eviction);
`FullAttentionManager.find_longest_cache_hit` phase 2 and `_cache_partial_tail_block`
(`kvcore.managers.fine_lookup`, `fine_full_attention`);
`MambaManager.find_longest_cache_hit` at hash granularity, `_partial_hit_reqs` and the
copy-on-write in `get_num_blocks_to_allocate` / `allocate_new_blocks` (`_apply_cow`), the
producer's tail and the Mamba2 checkpoint re-keyed (`replace_existing_hashes`)
(`kvcore.managers.mamba_partial`); `Scheduler._free_cow_retained_blocks` (at the end of each
schedule(): vLLM defers it only with a KV connector); `HybridKVCacheCoordinator._align_cacheable`
(no rounding) and `_cache_hit_alignment_tokens` (`kvcore.coordinator`,
`kvcore.hybrid_coordinator`);
`Scheduler._mamba_block_aligned_split` (`ckpt_block_size`, `tail_boundary`:
`kvcore.engine.mamba_split`). Checked against the real Scheduler and AsyncScheduler:
tests/data/sched_mamba/p16_* and p8_* (548 random runs, README there); without partial hits
beside sliding windows, tests/data/sched_mamba_mixed_pmu/.
Start-up values recorded from the real vLLM in tests/data/mamba/prefix_match_unit.json.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kvcore.specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KVCacheSpec,
    MambaSpec,
    SlidingWindowSpec,
)

# (every kvcli spec is prefix-cacheable in vLLM's sense, cross-attention's included: its
# manager ignores the cache, the spec does not opt out)


def resolve_block_sizes(specs: Sequence[KVCacheSpec], prefix_match_unit: int | None,
                        enable_caching: bool) -> tuple[int, int]:
    """(scheduler block, hash block) as vLLM resolves them; ValueError in vLLM's words when it
    refuses the unit."""
    sizes = [s.block_size for s in specs]
    if len(specs) <= 1:
        bs = sizes[0] if sizes else 0
        if prefix_match_unit not in (None, bs) and len(specs) == 1 and enable_caching:
            raise ValueError(f"Invalid prefix_match_unit={prefix_match_unit}; with a single "
                             "KV cache group, prefix-cache hits land on the block size "
                             f"({bs}). Unset it or set it to {bs}.")
        return bs, bs
    scheduler = math.lcm(*sizes)
    if not enable_caching:
        return scheduler, scheduler
    hashing = sizes
    hash_bs = prefix_match_unit if prefix_match_unit is not None else math.gcd(*hashing)
    if any(b % hash_bs for b in hashing):
        raise ValueError(f"Invalid prefix_match_unit={hash_bs}; prefix-cacheable KV cache group "
                         "block sizes must be divisible by prefix_match_unit. Got group block "
                         f"sizes={sizes}, prefix-cacheable={hashing}.")
    return scheduler, hash_bs


def partial_hash_hits(specs: Sequence[KVCacheSpec], hash_block_size: int,
                      enable_caching: bool) -> bool:
    """vLLM's partial_hash_hits_enabled with the managers' classes (as its coordinator asks):
    a Mamba group in align mode (kvcli's whenever prefix caching is on) coarser than the hash
    block, and no block-aligned-only manager at another block size."""
    if not enable_caching or not any(isinstance(s, MambaSpec) and s.block_size > hash_block_size
                                     for s in specs):
        return False
    # (full attention's and Mamba's managers look up at hash granularity; the others not)
    return not any(not isinstance(s, (FullAttentionSpec, MambaSpec))
                   and s.block_size != hash_block_size for s in specs)


def cache_hit_alignment(specs: Sequence[KVCacheSpec], prefix_match_unit: int | None,
                        enable_caching: bool) -> int:
    """The token grid hits land on (vLLM's resolve_cache_hit_alignment_tokens)."""
    scheduler, hash_bs = resolve_block_sizes(specs, prefix_match_unit, enable_caching)
    if not enable_caching or len(specs) <= 1:
        return scheduler
    return hash_bs if partial_hash_hits(specs, hash_bs, enable_caching) else scheduler


def chunked_alignment(specs: Sequence[KVCacheSpec], prefix_match_unit: int | None) -> int:
    """The block vLLM's chunked local manager asserts its own is (prefix caching on): the hit
    alignment, the hash block with partial hash hits, else the groups' lcm (also where vLLM
    refuses the unit: that refusal is said elsewhere)."""
    try:
        return cache_hit_alignment(specs, prefix_match_unit, True)
    except ValueError:
        return math.lcm(*(s.block_size for s in specs))


def checkpoint_grid(prefix_match_unit: int | None, layer_alignment: int,
                    mamba_block_size: int) -> int:
    """vLLM's get_mamba_prefill_checkpoint_grid: where a checkpointing layer's prefill
    checkpoints may sit."""
    if prefix_match_unit is not None:
        return math.lcm(prefix_match_unit, layer_alignment)
    return mamba_block_size


def unmodelled(specs: Sequence[KVCacheSpec], prefix_match_unit: int | None,
               enable_caching: bool) -> str | None:
    """Why kvcli cannot replay this unit exactly (None: it can): vLLM accepted it and it hashes
    finer than some prefix-cacheable group's block over a group that is neither full
    attention, a sliding window, a chunked local group nor Mamba (with the CPU tier or
    without)."""
    if prefix_match_unit is None:
        return None
    _, hash_bs = resolve_block_sizes(specs, prefix_match_unit, enable_caching)
    coarser = sorted({s.block_size for s in specs if s.block_size != hash_bs})
    if not enable_caching or not coarser:
        return None
    if all(isinstance(s, (FullAttentionSpec, SlidingWindowSpec, MambaSpec,
                          ChunkedLocalAttentionSpec)) for s in specs):
        # (checked against vLLM, engine mode, sync and async: partial hits over full attention
        # and Mamba, tests/data/sched_mamba/, and beside sliding windows and a chunked local
        # group at the hash block, tests/data/sched_mamba_window_pmu/; without them (full
        # attention registers the prompt's tail at the unit, Mamba its last hash boundary)
        # beside Mamba groups, drafts and cache mode too, tests/data/sched_mamba_mixed_pmu/,
        # a chunked local group at the lcm there, sched_chunked_mamba/ cxN, and without a
        # Mamba group, where the unit is only the hash block, tests/data/sched_mixed_pmu/,
        # sched_chunked_pmu/; with the CPU tier, tests/data/offload_mamba_partial/,
        # offload_mixed_spec/, offload_mixed_pmu/, offload_chunked_pmu/. A chunked local group
        # off the hit alignment fails at vLLM's first lookup: kvcore.engine.first_lookup.)
        return None
    blocks = ", ".join(f"{b:,}" for b in coarser)
    partial = partial_hash_hits(specs, hash_bs, enable_caching)
    what = ("hits inside a block next to a group that is neither full attention, a sliding "
            "window, a chunked local group nor Mamba" if partial
            else "registers a prompt's partial last block under a finer hash in full attention")
    return (f"{prefix_match_unit} is finer than the block ({blocks} tokens): vLLM then {what}, "
            "which kvcli does not model yet; leave it unset or set it to the block")
