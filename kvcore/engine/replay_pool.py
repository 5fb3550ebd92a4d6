"""The replay's pool: its KV cache groups and its size.

Groups come from a model (`kvcore.sizing`, which may also size `num_blocks` from GPU memory),
from a token-id trace's config line (`groups`, the op scripts' spelling, every group at the
trace's block size unless it gives its own, one layer each), or are one full-attention group.
`num_blocks` defaults to the engine's 16,384 or, in cache mode, room for every prompt block.
With groups from a config line, vLLM's start-up check applies (`check_startup`): one
`max_model_len` request must fit.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from kvcore.engine.options import ENGINE_NUM_BLOCKS, ReplayOptions
from kvcore.engine.refusal import refusal
from kvcore.engine.scheduler_io import max_concurrent_batches
from kvcore.engine.spec_decode import spec_draft
from kvcore.errors import InputError
from kvcore.managers.registry import spec_from_group_config
from kvcore.mm_options import mm_options
from kvcore.models.geometry import ModelGeometry
from kvcore.models.mm_prefix import check_atomic_item
from kvcore.models.worker_specs import DEFAULT_BLOCK_SIZE
from kvcore.sizing_context import SizingContext
from kvcore.specs import FullAttentionSpec, KVCacheGroupSpec, KVCacheSpec, MambaSpec, cdiv
from kvcore.traces import Trace

if TYPE_CHECKING:
    from collections.abc import Callable

    from kvcore.sizing.result import SizingResult


def _config_group(group: dict, cfg: ReplayOptions, trace: Trace) -> KVCacheSpec:
    """A config line's group, at its own `block_size` or the replay's (vLLM's planning gives
    an EAGLE draft's group its own where its page differs: tests/data/sched_spec_eagle_mixed/).
    With prefix caching off vLLM runs Mamba in "none" mode (`MambaModelConfig`): a Mamba block
    holds max_model_len tokens, one a request."""
    given = group.get("block_size", cfg.block_size) if isinstance(group, dict) else None
    if given is not None and (type(given) is not int or given < 1):
        raise refusal(cfg, trace, "groups", f"a {group.get('type')} group's block_size must "
                      f"be a positive integer, got {given!r}")
    spec = spec_from_group_config(group, given or cfg.block_size)
    if isinstance(spec, MambaSpec) and cfg.enable_prefix_caching and given != cfg.block_size \
            and not (cfg.pipeline_parallel_size > 1 and given and given % cfg.block_size == 0):
        # (align mode: vLLM's platform sets mamba_block_size to the attention block size, which
        # the Scheduler's aligned split reads as cache_config.block_size; `mamba_split`. Under
        # pipeline parallelism a stage holding attention raises its Mamba layers' block to a
        # multiple of the block a stage without any keeps, the engine's smallest:
        # `kvcore.sizing.stage_specs`)
        raise refusal(cfg, trace, "groups", f"a mamba group's block_size {given!r} is not the "
                      f"{cfg.block_size} vLLM runs it at with prefix caching on (its align "
                      "mode sets mamba_block_size to block_size)")
    if isinstance(spec, MambaSpec) and not cfg.enable_prefix_caching and cfg.max_model_len:
        if given != cfg.block_size:
            raise refusal(cfg, trace, "groups", f"a mamba group's block_size {given!r} is not "
                          f"the {cfg.max_model_len} it runs at with prefix caching off "
                          "(max_model_len)")
        spec = dataclasses.replace(spec, block_size=cfg.max_model_len)
    if isinstance(spec, MambaSpec) and cfg.num_speculative_tokens:
        # vLLM's MambaBase.get_kv_cache_spec: K speculative state blocks a request, whatever
        # the method (vllm_config.num_speculative_tokens; 0 only with use_replayssm)
        spec = dataclasses.replace(spec, num_speculative_blocks=cfg.num_speculative_tokens)
    return spec


def concurrent_batches(cfg: ReplayOptions) -> int:
    """vLLM's max_concurrent_batches in engine mode (`scheduler_io.max_concurrent_batches`;
    cache mode runs no engine: 1). It also sizes the in-flight tokens a sliding-window or
    chunked-local group reserves for."""
    if cfg.mode != "engine":
        return 1
    return max_concurrent_batches(cfg.async_scheduling, cfg.pipeline_parallel_size)


def sized(cfg: ReplayOptions, trace: Trace
          ) -> tuple[ReplayOptions, list[KVCacheGroupSpec], SizingResult | None]:
    """The options with `num_blocks` (and, from a model, `max_model_len`) filled in, vLLM's
    start-up scheduler defaults applied (`sched_limits`), the KV cache groups: the model's
    (the sizing layer), else one full-attention group; and the model's sizing (None without
    a model): its geometry, read once here for whatever else the start-up asks of the model,
    and its pipeline stages (rank 0's groups size the CPU tier's chunk)."""
    from kvcore.engine import sched_limits

    fill: dict = {}
    res = None
    if cfg.model or cfg.model_config:
        # (prefix caching as a flag or the config line set it, else vLLM's default for the
        # model: None)
        set_by_user = ("enable_prefix_caching" in (cfg.given or ())
                       or "enable_prefix_caching" in trace.config_keys)
        # (--block-size as a flag or the config line set it, or a size not the default's (a
        # sweep's job, say); else vLLM's default, which it raises for a sparse MLA model where
        # a given size stays or is refused)
        given_block = ("block_size" in (cfg.given or ()) or "block_size" in trace.config_keys
                       or cfg.block_size != DEFAULT_BLOCK_SIZE)
        res = _resolve_model(cfg, caching=cfg.enable_prefix_caching if set_by_user else None,
                             given_block=given_block, trace=trace)
        geometry = res.geometry
        if res.enable_prefix_caching != cfg.enable_prefix_caching:
            # (not set: vLLM's default for the model, off for an attention-free one)
            cfg = dataclasses.replace(cfg, enable_prefix_caching=res.enable_prefix_caching)
        # (vLLM's scheduler defaults come from the length before a draft lowers it:
        # SchedulerConfig is built before VllmConfig lowers it, `kvcore.sizing.draft_len`)
        limit = res.draft_limit
        if cfg.max_model_len is None:
            fill["max_model_len"] = limit.target if limit else res.ctx.max_model_len
        limited = sched_limits.apply(dataclasses.replace(cfg, **fill), trace)
        if limited.max_num_batched_tokens != cfg.max_num_batched_tokens:
            # vLLM sizes the pool after its defaults: the windows' in-flight tokens follow them
            res = _resolve_model(dataclasses.replace(
                cfg, max_num_batched_tokens=limited.max_num_batched_tokens), geometry,
                caching=cfg.enable_prefix_caching, given_block=given_block)
        if cfg.num_blocks is None and (cfg.gpu_memory_gib is not None or cfg.mode == "engine"):
            fill["num_blocks"] = res.config.num_blocks
        groups = list(res.config.kv_cache_groups)
        if cfg.groups is not None:
            # the model's layers are the groups: a config line's are dropped (said in
            # `start_warnings`; the run's config showed them as if they had run)
            fill["groups"] = None
    elif cfg.groups is not None:
        groups = [KVCacheGroupSpec((f"layer{i}",), _config_group(g, cfg, trace))
                  for i, g in enumerate(cfg.groups)]
    else:
        groups = [KVCacheGroupSpec(("layer",), FullAttentionSpec(block_size=cfg.block_size))]
    if cfg.num_blocks is None and "num_blocks" not in fill:
        if cfg.mode == "cache":
            # Room for every block of every prompt (in every group), plus the null block and
            # one spare (as the cache-mode oracle sizes "infinite").
            fill["num_blocks"] = len(groups) * sum(cdiv(r.prompt_len, cfg.block_size)
                                                   for r in trace.requests) + 2
        else:
            fill["num_blocks"] = ENGINE_NUM_BLOCKS
    out = sched_limits.apply(dataclasses.replace(cfg, **fill), trace)
    if res is not None and out.mode == "engine" and out.max_num_batched_tokens is not None:
        # (vLLM's refusal where an image it prefills whole does not fit a step)
        check_atomic_item(res.geometry.mm_atomic_items, mm_options(
            cfg.limit_mm_per_prompt, cfg.language_model_only, cfg.mm_encoder_tp_mode),
            out.max_num_batched_tokens)
    if res is not None and res.draft_limit is not None:
        out = dataclasses.replace(out, max_model_len=res.draft_limit.draft)
    return out, groups, res


def _resolve_model(cfg: ReplayOptions, geometry: ModelGeometry | None = None,
                   caching: bool | None = None, given_block: bool = True,
                   trace: Trace | None = None) -> SizingResult:
    """The sizing layer's answer for the options' model (``geometry``: the model as read
    already, not read again), with prefix caching ``caching`` (None: vLLM's default for the
    model); ``given_block``: whether the block size was set (else sized as vLLM's default);
    with ``trace``, an engine's start-up refusals met first (`_startup_check`)."""
    from kvcore.sizing.resolve import resolve_kv_cache_config

    num_blocks = cfg.num_blocks
    if num_blocks is None and cfg.gpu_memory_gib is None and cfg.mode == "engine":
        num_blocks = ENGINE_NUM_BLOCKS
    try:
        return resolve_kv_cache_config(
            None if geometry else cfg.model,
            model_config=None if geometry else cfg.model_config, geometry=geometry,
            gpu_memory_gib=cfg.gpu_memory_gib, gpu_memory_utilization=cfg.gpu_memory_utilization,
            block_size=cfg.block_size if given_block else None,
            max_model_len=cfg.max_model_len,
            max_num_batched_tokens=cfg.max_num_batched_tokens,
            max_concurrent_batches=concurrent_batches(cfg),
            num_blocks=num_blocks, enable_prefix_caching=caching,
            kv_cache_dtype=cfg.kv_cache_dtype, tensor_parallel_size=cfg.tp, check_memory=False,
            prefix_match_unit=cfg.prefix_match_unit,
            pipeline_parallel_size=cfg.pipeline_parallel_size,
            draft=spec_draft(cfg), num_speculative_tokens=cfg.num_speculative_tokens,
            mm=mm_options(cfg.limit_mm_per_prompt, cfg.language_model_only,
                          cfg.mm_encoder_tp_mode),
            startup_check=_startup_check(cfg, trace) if trace is not None else None)
    except InputError as err:
        # the sizing layer spells vLLM's name; the replay's option (and a sweep's key) is `tp`
        if err.field == "tensor_parallel_size" and err.path is None:
            raise InputError(err.message, field="tp") from None
        raise


def group_type(spec) -> str:
    kind = getattr(spec, "kind", "full")
    return "full_attention" if kind == "full" else kind


def startup_shortfall(groups: list[KVCacheGroupSpec], cfg: ReplayOptions,
                      num_blocks: int) -> str | None:
    """Why vLLM's start-up check (`get_kv_cache_configs` with a block-count override) refuses
    the pool, or None: one request of `max_model_len` tokens must fit in the usable blocks, each
    group counting the pages its spec can hold at once (the window or chunk plus what is in
    flight, for the local ones)."""
    if cfg.max_model_len is None:
        return None
    ctx = SizingContext(max_model_len=cfg.max_model_len,
                        max_num_batched_tokens=cfg.max_num_batched_tokens,
                        max_concurrent_batches=concurrent_batches(cfg),
                        mamba_cache_mode="align" if cfg.enable_prefix_caching else "none")
    one = dataclasses.replace(ctx, max_concurrent_batches=1)
    need = alone = 0
    parts = []
    for g in groups:
        spec = g.kv_cache_spec
        pages = cdiv(spec.max_memory_usage_bytes(ctx), spec.page_size_bytes)
        need += pages
        alone += cdiv(spec.max_memory_usage_bytes(one), spec.page_size_bytes)
        parts.append(f"{pages:,} {group_type(spec)}")
    if need > num_blocks - 1:
        # (the queue's depth is named only where it raised the count: a windowed group's)
        why = in_flight_note(cfg, ctx.max_concurrent_batches) if need > alone else ""
        return (f"one request of max_model_len {cfg.max_model_len:,} tokens needs {need:,} "
                f"blocks ({' + '.join(parts)}) but only {num_blocks - 1:,} are usable "
                f"(num_blocks {num_blocks:,}): vLLM refuses to start{why}")
    return None


def in_flight_note(cfg: ReplayOptions, depth: int) -> str:
    """What put ``depth`` batches in flight, for a start-up refusal whose count they raised."""
    if cfg.pipeline_parallel_size > 1:
        sched = " with async scheduling" if cfg.async_scheduling else ""
        return (f" (pipeline parallelism {cfg.pipeline_parallel_size}{sched}: {depth} "
                "batches in flight)")
    return " (async scheduling: 2 batches in flight; --no-async-scheduling reserves for 1)"


def check_startup(groups: list[KVCacheGroupSpec], cfg: ReplayOptions, num_blocks: int,
                  trace: Trace) -> None:
    """`startup_shortfall` as an error: groups from a config line, where vLLM's refusal holds."""
    message = startup_shortfall(groups, cfg, num_blocks)
    if message is not None:
        raise refusal(cfg, trace, "num_blocks", message)


def _startup_check(cfg: ReplayOptions, trace: Trace) -> Callable[[ModelGeometry, int], None]:
    """vLLM's engine start-up refusals before its model is built and its memory profiled: the
    scheduler's limits, then the input processor's multimodal item budget (an item prefilled
    whole that does not fit a step), on the model's length where none is given."""
    from kvcore.engine import sched_limits

    def check(g: ModelGeometry, model_len: int) -> None:
        if cfg.mode != "engine":
            return
        limited = sched_limits.apply(dataclasses.replace(
            cfg, max_model_len=cfg.max_model_len or model_len), trace)
        if limited.max_num_batched_tokens is not None:
            check_atomic_item(g.mm_atomic_items, mm_options(
                cfg.limit_mm_per_prompt, cfg.language_model_only, cfg.mm_encoder_tp_mode),
                limited.max_num_batched_tokens)
    return check

