"""A replay's start-up: what it decides and refuses from its options before it allocates anything.

`start_up(trace, cfg)` sizes the pool (`replay_pool.sized`: a model's groups, vLLM's scheduler
defaults and refusals in `sched_limits`), checks it fits this machine, applies vLLM's start-up
check (`check_startup`) and the retention interval's rule, makes the clock and the CPU tier's
config, and foresees vLLM's failure at its first prefix-cache lookup (`lookup_refusal`: the
run raises it when it looks up). `ReplayContext` builds on its answer; `kvcli sweep` calls it
for every job while it plans, so that a value only a run would refuse (`clock=bogus`, a model
that is no preset, a CPU tier too small for one chunk) stops the sweep before any job runs and
before its results file is opened, instead of failing job by job. Nothing here allocates the
pool.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvcore.clock.base import Clock
from kvcore.clock.registry import make_clock
from kvcore.engine.first_lookup import first_lookup_refusal
from kvcore.engine.hit_notes import cache_mode_mamba_note, no_hit_note
from kvcore.engine.options import ReplayOptions
from kvcore.engine.refusal import refusal, said_where_set, tier_option, where_set
from kvcore.engine.replay_pool import check_startup, sized, startup_shortfall
from kvcore.engine.sched_limits import spec_budget_warning
from kvcore.engine.spec_config import EAGLE_METHODS, check_method
from kvcore.engine.spec_decode import spec_draft
from kvcore.errors import InputError
from kvcore.group_specs import hashing_block_sizes
from kvcore.host_memory import check_pool_fits
from kvcore.models.eagle_draft import DRAFT_PRESETS
from kvcore.models.geometry import ModelGeometry
from kvcore.models.mm_serving import MMState
from kvcore.models.pangu_sinks import refuse_sink_run
from kvcore.offload.config import OffloadConfig, empty_tier_note
from kvcore.offload.hybrid_partial import partial_tail_block
from kvcore.offload.options import (
    check_supported,
    chunk_in_tokens_refusal,
    least_hit_tokens,
    offload_config,
    sync_budget_note,
)
from kvcore.prefix_match import unmodelled
from kvcore.retention import check_retention_interval, dense_retention_note
from kvcore.specs import KVCacheGroupSpec
from kvcore.traces import Trace


@dataclass(frozen=True, slots=True)
class StartUp:
    cfg: ReplayOptions                  # `num_blocks` filled in, vLLM's defaults applied
    groups: list[KVCacheGroupSpec]
    clock: Clock
    offload: OffloadConfig | None       # the CPU tier's (None: off)
    geometry: ModelGeometry | None      # the model's, read once (None: no model)
    notes: tuple[str, ...] = ()         # warnings only the start-up can tell (the replay's)
    # vLLM's failure at its first prefix-cache lookup (`first_lookup`), raised by the run when
    # it looks up (a run that never does, as vLLM's, runs)
    lookup_refusal: InputError | None = None
    mm: MMState | None = None           # the sizing's multimodal outcome (None: no model)

    @property
    def hash_block_size(self) -> int:
        return hash_block_size(self.cfg, self.groups)


def hash_block_size(cfg: ReplayOptions, groups: list[KVCacheGroupSpec]) -> int:
    """The block size the manager hashes at: `--prefix-match-unit` with prefix caching on
    (vLLM refuses any other with one group), else the gcd of the groups' (as vLLM's)."""
    if cfg.prefix_match_unit is not None and cfg.enable_prefix_caching:
        return cfg.prefix_match_unit
    return math.gcd(*hashing_block_sizes([g.kv_cache_spec for g in groups]))


def check_prefix_match_unit(cfg: ReplayOptions, groups: list[KVCacheGroupSpec],
                            trace: Trace) -> None:
    """vLLM's refusals of `prefix_match_unit` on these groups, then kvcli's own of a unit it
    cannot replay exactly (`kvcore.prefix_match`), on the option or the trace's config line;
    not where vLLM fails at its first lookup (`first_lookup`: its words, not kvcli's)."""
    unit = cfg.prefix_match_unit
    if unit is None:
        return
    specs = [g.kv_cache_spec for g in groups]
    try:
        why = unmodelled(specs, unit, cfg.enable_prefix_caching)
        if why is not None and first_lookup_refusal(cfg, trace, groups) is not None:
            # (vLLM fails at its first lookup, before anything the unit changes happens: the
            # unit's effects need a request scheduled, so a lookup made)
            why = None
        message = None if why is None else f"must be the block size here: {why}"
    except ValueError as err:
        message = f"vLLM refuses to start: {err}"
    if message is None:
        return
    raise refusal(cfg, trace, "prefix_match_unit", message)


def spec_refusals(cfg: ReplayOptions, trace: Trace) -> None:
    """Speculative decoding's companions: its acceptance model must be given, and what it is
    not checked against vLLM with is refused."""
    name = "num_speculative_tokens"
    if cfg.spec_acceptance_rate is None:
        raise refusal(cfg, trace, name, "needs spec_acceptance_rate (--spec-acceptance-rate R: "
                      "the chance each draft is accepted, kvcli's model; a replay has no text "
                      "to judge drafts by)")
    if cfg.mode != "engine":
        raise refusal(cfg, trace, name, "needs engine mode (cache mode runs no steps to "
                      "verify drafts in)")
    try:
        # (a deprecated name of mtp is mtp here: the flags and `options.resolve` rewrite it)
        check_method(cfg.spec_method, "spec_method")
    except InputError as err:
        raise refusal(cfg, trace, "spec_method", err.message) from None
    if cfg.spec_method not in EAGLE_METHODS:
        return
    if cfg.num_blocks is None and (cfg.model or cfg.model_config) and spec_draft(cfg) is None:
        # (vLLM needs the draft's config.json; its layers and weights change the pool; MTP's
        # draft is the model's own module)
        raise refusal(cfg, trace, "spec_method", f"{cfg.spec_method} with a pool sized from a "
                      "model needs its draft model to size it with: spec_model (--spec-model "
                      "or the speculative config's model: a config.json, or "
                      f"{', '.join(DRAFT_PRESETS)}), or give num_blocks")


def spec_group_refusals(cfg: ReplayOptions, trace: Trace,
                        groups: list[KVCacheGroupSpec]) -> None:
    """What speculative decoding is not modelled with, by the KV cache groups."""
    # (a Mamba group keeps K speculative state blocks, whatever the method: a config line's
    # gets them in `replay_pool`, a model's from the sizing, both from num_speculative_tokens;
    # with pipeline parallelism too, checked against vLLM in tests/data/sched_spec_pp_mamba/)
    if cfg.spec_method not in EAGLE_METHODS:
        return
    if cfg.eagle_groups is not None:
        if cfg.groups is None:
            raise refusal(cfg, trace, "eagle_groups", "names groups of the config line's "
                          "groups, which it has none of (a pool sized from a model flags the "
                          "groups holding its draft's layers itself)", also=("groups",))
        if max(cfg.eagle_groups) >= len(groups):
            raise refusal(cfg, trace, "eagle_groups", f"names group {max(cfg.eagle_groups)}, "
                          f"past the {len(groups)} groups (0 to {len(groups) - 1})")


def start_up(trace: Trace, cfg: ReplayOptions) -> StartUp:
    """The resolved options' start-up on `trace`; raises `InputError` for what a run refuses,
    naming the trace's config line where that line gave the refused value (the sizing layer and
    the CPU tier's checks know only the option: a config line's `prefix_match_unit` or
    `prefix_cache_retention_interval` was refused as `option --...`, a flag nobody typed)."""
    try:
        return _start_up(trace, cfg)
    except InputError as err:
        raise said_where_set(cfg, trace, err) from None


def _start_up(trace: Trace, cfg: ReplayOptions) -> StartUp:
    if cfg.num_speculative_tokens:
        spec_refusals(cfg, trace)
    sized_here = cfg.num_blocks is None      # a given num_blocks was checked by `resolve`
    cfg, groups, sizing = sized(cfg, trace)
    geometry = sizing.geometry if sizing is not None else None
    # (vLLM's engine fails building a model's managers after planning its pool: both modes)
    refuse_sink_run(geometry, "model" if cfg.model else "model_config")
    if cfg.num_speculative_tokens:
        spec_group_refusals(cfg, trace, groups)
    num_blocks = cfg.num_blocks
    assert num_blocks is not None            # (sized above)
    if sized_here:
        # A pool sized here (from GPU memory, or cache mode's room for every prompt block)
        # is refused up front when this machine cannot hold it.
        check_pool_fits(num_blocks, field="gpu_memory_gib"
                        if cfg.gpu_memory_gib is not None else "num_blocks")
    notes: tuple[str, ...] = ()
    if sizing is not None and sizing.draft_limit is not None:
        notes = (sizing.draft_limit.warning(),)     # (vLLM's, lowering max_model_len)
    if cfg.mode == "engine" and (spec := spec_budget_warning(
            cfg.max_num_batched_tokens, cfg.num_speculative_tokens)) is not None:
        notes = (*notes, spec)                      # (vLLM's next: the step budget)
    if sizing is not None:
        notes = (*notes, *sizing.planning_warnings)     # (then its engine's, planning groups)
    if cfg.groups is not None:
        check_startup(groups, cfg, num_blocks, trace)
    elif geometry is not None and cfg.mode == "engine":
        # A model keeps per-request rejection (a model's max_model_len would refuse every small
        # pool a study of eviction uses), but says that vllm serve would not start.
        short = startup_shortfall(groups, cfg, num_blocks)
        if short is not None:
            notes = (*notes, (f"{short}; replayed all the same (a request that can never fit "
                              "is refused alone): give max_model_len as vllm serve would need "
                              "it (kvcli config reports the largest that fits)"))
    check_prefix_match_unit(cfg, groups, trace)
    chunk_in_tokens_refusal(cfg, groups)    # (vLLM's workers assert it before the retention's)
    try:
        check_retention_interval(cfg.prefix_cache_retention_interval,
                                 math.lcm(*(g.kv_cache_spec.block_size for g in groups)),
                                 [g.kv_cache_spec for g in groups])
    except ValueError as err:
        raise refusal(cfg, trace, "prefix_cache_retention_interval", str(err)) from None
    if dense := dense_retention_note(cfg.prefix_cache_retention_interval,
                                     [g.kv_cache_spec for g in groups],
                                     where_set(cfg, trace, "prefix_cache_retention_interval")):
        notes = (*notes, dense)
    for note in (no_hit_note(cfg, trace, groups, cfg.offloading),
                 cache_mode_mamba_note(cfg, groups)):
        if note is not None:
            notes = (*notes, note)
    clock = make_clock(cfg, geometry)
    offload = offload_config(cfg, sizing.rank0_groups if sizing is not None else groups)
    if offload is not None:
        hbs = hash_block_size(cfg, groups)
        try:
            check_supported(groups, cfg.prefix_cache_retention_interval,
                            offload.tokens_per_chunk, cfg.enable_prefix_caching)
        except InputError as err:
            if err.field != "kv_offloading_size":
                raise
            # (the tier's refusals name its size; the tier may be on by the other size key,
            # a config line's kv_offloading_size_chunks was said as `option --kv-offloading-size`)
            raise refusal(cfg, trace, tier_option(cfg, trace), err.message) from None
        # (with partial tails a load may be one hash block: `hybrid_partial`)
        tail = partial_tail_block([g.kv_cache_spec for g in groups], offload.blocks_per_chunk,
                                  hbs) and hbs
        for note in (empty_tier_note(offload),
                     sync_budget_note(cfg, offload,
                                      where_set(cfg, trace, "sync_load_budget_bytes"), tail,
                                      least_hit_tokens(groups))):
            if note is not None:
                notes = (*notes, note)
    return StartUp(cfg, groups, clock, offload, geometry, notes,
                   first_lookup_refusal(cfg, trace, groups),
                   sizing.mm if sizing is not None else None)
