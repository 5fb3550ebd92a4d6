"""vLLM's asserts at its first prefix-cache lookup, which kvcli makes after every start-up check
(`kvcore.engine.startup`): a chunked local attention group whose block is not the hit alignment,
and EAGLE's block drop in one. vLLM's `HybridKVCacheCoordinator.find_longest_cache_hit` visits
every spec group in its first round, so the first lookup reaches them whatever the cache holds.
"""

from __future__ import annotations

import math

from kvcore.engine.options import ReplayOptions
from kvcore.engine.refusal import refusal, tier_option
from kvcore.engine.spec_config import EAGLE_METHODS
from kvcore.engine.spec_decode import eagle_block_drop, eagle_group_ids
from kvcore.errors import InputError
from kvcore.prefix_match import chunked_alignment
from kvcore.specs import ChunkedLocalAttentionSpec, KVCacheGroupSpec
from kvcore.traces import Trace


def hit_alignment(cfg: ReplayOptions, groups: list[KVCacheGroupSpec]) -> int:
    """The token grid prefix-cache hits land on (vLLM's `cache_hit_alignment_tokens`), which a
    chunked local group's block must be: the hash block with partial hash hits, else the lcm
    (`kvcore.prefix_match.chunked_alignment`, which the unit's refusal reads too)."""
    return chunked_alignment([g.kv_cache_spec for g in groups], cfg.prefix_match_unit)


def chunked_block_refusal(cfg: ReplayOptions, trace: Trace,
                          groups: list[KVCacheGroupSpec]) -> InputError | None:
    """vLLM's chunked local attention manager asserts that its block is the hit alignment
    (`hit_alignment`): the groups' lcm, or with partial hash hits the hash block (a chunked
    group at the hash block beside coarser Mamba groups runs: tests/data/sched_chunked_mamba/).
    The lookup's fixed point visits every spec group in its first round, so the first
    prefix-cache lookup reaches it whatever the cache holds: vLLM fails there, after its
    start-up checks (`em6` at step 0, `em67` and `em80` at step 1 after an idle step; the 30
    such cases of tests/data/sched_chunked_mixed/ at the first arrival). Refused after kvcli's
    own start-up checks (the pool's first: `cms22`), in vLLM's words."""
    if not cfg.enable_prefix_caching:
        return None
    align = hit_alignment(cfg, groups)
    fine = sorted({g.kv_cache_spec.block_size for g in groups
                   if isinstance(g.kv_cache_spec, ChunkedLocalAttentionSpec)
                   and g.kv_cache_spec.block_size != align})
    if not fine:
        return None
    # (partial hash hits off, the alignment is the scheduler block, the lcm)
    lcm = math.lcm(*(g.kv_cache_spec.block_size for g in groups))
    sizes = sorted({g.kv_cache_spec.block_size for g in groups})
    return refusal(cfg, trace, "groups", f"KV cache groups of different block sizes "
                   f"({', '.join(map(str, sizes))} tokens) with a chunked local attention "
                   f"group of {fine[0]} tokens, finer than their lcm ({lcm}), fail in vLLM at "
                   "its first prefix-cache lookup: 'KV cache groups with different block sizes "
                   "are not compatible with chunked local attention now' (they run with "
                   "prefix caching off)", also=("spec_method", "spec_model"))


def eagle_drop_refusal(cfg: ReplayOptions, trace: Trace,
                       groups: list[KVCacheGroupSpec]) -> InputError | None:
    """EAGLE's block drop in a chunked local attention group: vLLM fails at the first lookup,
    after its start-up checks (a pool too small is refused first: offload_pp_more's ppos10000)."""
    if cfg.spec_method not in EAGLE_METHODS:
        return None
    flagged = eagle_group_ids(cfg, groups) or range(len(groups))
    if eagle_block_drop(cfg) and cfg.enable_prefix_caching and any(
            isinstance(groups[i].kv_cache_spec, ChunkedLocalAttentionSpec) for i in flagged):
        # (vLLM asserts at the first lookup: "Hybrid KV cache is not supported for eagle +
        # chunked local attention"; none flagged, every group drops)
        if cfg.offloading:
            # (a KV connector keeps vLLM's legacy hashes whatever the flag says: the drop is
            # the tier's doing, and lookahead hashes are no way out)
            return refusal(cfg, trace, tier_option(cfg, trace), "a CPU tier keeps vLLM's "
                           f"legacy block hashes, so {cfg.spec_method} drops its last block in "
                           "a chunked local attention group, which vLLM does not support (it "
                           "fails at the first lookup: 'Hybrid KV cache is not supported for "
                           "eagle + chunked local attention.'): flag only the groups holding the "
                           "draft's layers (eagle_groups), or give no CPU tier",
                           also=("eagle_groups",))
        return refusal(cfg, trace, "disable_lookahead_block_hashes", "drops EAGLE's last "
                       "block in a chunked local attention group, which vLLM does not support "
                       "(it fails at the first lookup: 'Hybrid KV cache is not supported for "
                       "eagle + chunked local attention.'): flag only the groups holding the "
                       "draft's layers (eagle_groups), or use lookahead hashes",
                       also=("eagle_groups",))
    return None


def first_lookup_refusal(cfg: ReplayOptions, trace: Trace,
                         groups: list[KVCacheGroupSpec]) -> InputError | None:
    """vLLM's asserts at its first prefix-cache lookup, so after every start-up check
    (`kvcore.engine.startup`: the prefix-match unit's and the retention's are the KV cache
    manager's, built with the Scheduler). The lookup visits the chunked local attention groups
    in group order (groups of one spec looked up together, at the first one's place:
    `verify_and_split_kv_cache_groups`), and each asserts that it drops no EAGLE block, then
    that its block is the hit alignment: the first group to fail names the refusal (None: the
    lookups pass)."""
    chunked: list = []
    for g in groups:
        if isinstance(g.kv_cache_spec, ChunkedLocalAttentionSpec) and \
                g.kv_cache_spec not in chunked:
            chunked.append(g.kv_cache_spec)
    drops = cfg.num_speculative_tokens and cfg.spec_method in EAGLE_METHODS and \
        eagle_block_drop(cfg) and cfg.enable_prefix_caching
    flagged = eagle_group_ids(cfg, groups) or range(len(groups))
    align = hit_alignment(cfg, groups)
    for spec in chunked:
        err = None
        if drops and any(groups[i].kv_cache_spec == spec for i in flagged):
            err = eagle_drop_refusal(cfg, trace, groups)
        if err is None and spec.block_size != align:
            err = chunked_block_refusal(cfg, trace, groups)
        if err is not None:
            return err
    return None
