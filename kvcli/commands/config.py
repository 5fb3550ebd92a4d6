"""`kvcli config [MODEL]`: how many KV cache blocks fit this model on this GPU, and why.

Groups, each page size with its formula, num_blocks, capacity in tokens, max concurrency at
max_model_len and the largest max_model_len that fits, as vLLM 0.33 plans them. ``--json``
keys are documented in `kvcore.sizing.explain`. ``--list`` lists the presets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from kvcli import config_options as co
from kvcore.sizing_context import DEFAULT_GPU_MEMORY_UTILIZATION


def register(app: typer.Typer) -> None:
    @app.command("config")
    def config(
        ctx: typer.Context,
        model: co.ModelArg = None,
        list_presets: co.ListOpt = False,
        model_config: co.ModelConfigOpt = None,
        gpu_memory_gib: co.GpuMemOpt = None,
        gpu: co.GpuOpt = None,
        gpu_memory_utilization: co.UtilOpt = DEFAULT_GPU_MEMORY_UTILIZATION,
        weights_gib: co.WeightsOpt = None,
        activation_gib: co.ActivationOpt = 0.0,
        kv_cache_dtype: co.KvCacheDtypeOpt = "auto",
        dtype: co.DtypeOpt = None,
        block_size: co.BlockSizeOpt = None,
        max_model_len: co.MaxModelLenOpt = None,
        max_num_batched_tokens: co.BudgetOpt = None,
        max_num_seqs: co.SeqsOpt = None,
        performance_mode: co.PerfModeOpt = "balanced",
        enable_chunked_prefill: co.ChunkedOpt = True,
        async_scheduling: co.AsyncOpt = None,
        max_concurrent_batches: co.BatchesOpt = None,
        num_blocks: co.NumBlocksOpt = None,
        tensor_parallel_size: co.TpOpt = 1,
        pipeline_parallel_size: co.PpOpt = 1,
        layers: co.LayersOpt = None,
        kv_heads: co.KvHeadsOpt = None,
        head_dim: co.HeadDimOpt = None,
        sliding_window: co.WindowOpt = None,
        sliding_layers: co.SlidingLayersOpt = None,
        attention_chunk_size: co.ChunkOpt = None,
        chunked_layers: co.ChunkedLayersOpt = None,
        disable_hybrid: co.NoHybridOpt = False,
        pad_pages: co.PadOpt = True,
        enable_prefix_caching: co.PrefixOpt = None,
        prefix_match_unit: co.UnitOpt = None,
        kv_offloading_size: co.OffloadOpt = None,
        kv_offloading_backend: co.OffloadBackendOpt = None,
        kv_offloading_block_size: co.OffloadBlockOpt = None,
        speculative_config: co.SpecConfigOpt = None,
        spec_method: co.SpecMethodOpt = None,
        spec_model: co.SpecModelOpt = None,
        spec_tokens: co.SpecTokensOpt = None,
        limit_mm_per_prompt: co.LimitMmOpt = None,
        language_model_only: co.LanguageOnlyOpt = False,
        mm_encoder_tp_mode: co.MmTpModeOpt = "weights",
        as_json: co.JsonOpt = False,
    ) -> None:
        """How many KV cache blocks fit a model on a GPU: groups, page formulas, capacity."""
        from kvcli import output

        def go() -> None:
            from kvcli.config_view import (
                add_cpu_tier,
                batch_source,
                list_view,
                prefix_match_line,
                sizing_view,
            )
            from kvcore.engine.spec_config import at_json_key
            from kvcore.errors import InputError
            from kvcore.vllm_values import kv_cache_dtype as vllm_kv_dtype
            from kvcore.vllm_values import kv_offloading_backend as check_backend

            if list_presets:
                if model is not None:
                    # the table of every preset came, and MODEL's sizing did not, silently
                    raise InputError(f"lists the presets: not with a MODEL ({model!r}); drop "
                                     "--list to size it", field="list")
                output.emit(list_view(), as_json=as_json)
                return
            from kvcore.engine.sched_limits import serve_limits, spec_budget_warning
            from kvcore.models.mm_prefix import check_atomic_item
            from kvcore.sizing.resolve import resolve_kv_cache_config

            bs = 16 if block_size is None else block_size
            # vLLM's value names (kvcore.vllm_values): its unmodelled ones refused, saying why
            kv_dtype = vllm_kv_dtype(kv_cache_dtype)
            model_dtype = None if dtype is None or dtype.strip().lower() == "auto" else dtype
            if kv_offloading_backend is not None:
                check_backend(kv_offloading_backend)
            batches = concurrent_batches(async_scheduling, max_concurrent_batches,
                                         pipeline_parallel_size)
            if kv_offloading_block_size is not None and kv_offloading_size is None:
                # the chunk size of a tier that is not there: it was dropped without a word
                raise InputError("needs --kv-offloading-size (the CPU tier it sizes the chunks "
                                 "of)", field="kv_offloading_block_size")

            renamed: list[str] = []     # (vLLM's word on a deprecated name of mtp)
            draft, spec_k, spec_json = spec_draft(speculative_config, spec_method, spec_model,
                                                  spec_tokens, renamed.append)
            from kvcore.mm_options import mm_options

            mm = mm_options(limit_mm_per_prompt, language_model_only, mm_encoder_tp_mode)

            def sized(budget: int) -> Any:
                try:
                    return _sized(budget)
                except InputError as err:
                    if err.path is None and err.field in spec_json:
                        raise at_json_key(err, spec_json) from None
                    if err.field != "model" or err.path is not None:
                        raise
                    # `model` is MODEL here (an argument) or --model-config, not "--model"
                    raise InputError(err.message, field="model_config" if model_config and not
                                     model else "model_argument") from None

            def _sized(budget: int) -> Any:
                return resolve_kv_cache_config(
                    model, model_config=model_config, layers=layers, kv_heads=kv_heads,
                    head_dim=head_dim, dtype=model_dtype, sliding_window=sliding_window,
                    sliding_layers=sliding_layers, attention_chunk_size=attention_chunk_size,
                    chunked_layers=chunked_layers, gpu_memory_gib=gpu_memory_gib,
                    gpu_memory_utilization=gpu_memory_utilization, weights_gib=weights_gib,
                    activation_gib=activation_gib, kv_cache_dtype=kv_dtype,
                    block_size=block_size, max_model_len=max_model_len,
                    max_num_batched_tokens=budget,
                    max_concurrent_batches=batches, num_blocks=num_blocks,
                    tensor_parallel_size=tensor_parallel_size, disable_hybrid=disable_hybrid,
                    pad_pages=pad_pages, enable_prefix_caching=enable_prefix_caching,
                    prefix_match_unit=prefix_match_unit,
                    pipeline_parallel_size=pipeline_parallel_size, draft=draft,
                    num_speculative_tokens=spec_k, mm=mm, startup_check=started)

            def started(g: Any, model_len: int) -> None:
                # (vLLM's scheduler limits, then its input processor's item budget: both before
                # the model is built and the memory profiled)
                budget = serve_limits(max_model_len=max_model_len or model_len, **serving)
                check_atomic_item(g.mm_atomic_items, mm, budget.max_num_batched_tokens)

            # the scheduler options' own checks first, in the replay's words (the sizing
            # layer's differ); the budget is the given one or the default here
            serving: dict[str, Any] = {"max_num_seqs": max_num_seqs, "gpu": gpu,
                                       "max_num_batched_tokens": max_num_batched_tokens,
                                       "enable_chunked_prefill": enable_chunked_prefill,
                                       "performance_mode": performance_mode,
                                       "spec_method": draft[1] if draft else None,
                                       "num_speculative_tokens": spec_k if draft else None}
            first = serve_limits(max_model_len=max_model_len, **serving).max_num_batched_tokens
            result = sized(first)
            # vLLM's start-up scheduler defaults and refusals on the model's max_model_len,
            # as a replay applies them (then the pool is sized again on the budget, as vLLM
            # sizes it after its defaults: the windows' in-flight tokens follow it)
            # (the length before a draft lowers it: `kvcore.sizing.draft_len`)
            limit = result.draft_limit
            limits = serve_limits(max_model_len=limit.target if limit else
                                  result.ctx.max_model_len, **serving)
            if limits.max_num_batched_tokens != first:
                result = sized(limits.max_num_batched_tokens)
            check_atomic_item(result.geometry.mm_atomic_items, mm, limits.max_num_batched_tokens)
            view = sizing_view(result, gpu_memory_gib=gpu_memory_gib,
                               gpu_memory_utilization=gpu_memory_utilization,
                               activation_gib=activation_gib, tp=tensor_parallel_size)
            view.data = {k: v for key, value in view.data.items() for k, v in (
                ((key, value), ("max_num_seqs", limits.max_num_seqs),
                 ("enable_chunked_prefill", enable_chunked_prefill))
                if key == "max_num_batched_tokens" else ((key, value),))}
            given_both = max_num_seqs is not None and max_num_batched_tokens is not None
            view.text.insert(0, f"scheduler: max_num_seqs {limits.max_num_seqs:,}, "
                             f"max_num_batched_tokens {limits.max_num_batched_tokens:,}, "
                             f"chunked prefill {'on' if enable_chunked_prefill else 'off'}"
                             + ("" if given_both else
                                f" ({batch_source(gpu, performance_mode)})"))
            if prefix_match_unit is not None:
                view.text.append(prefix_match_line(view.data["prefix_match"]))
            mla = result.geometry.mla is not None
            if kv_offloading_size is not None:
                from kvcore.offload.config import tier_copies

                # vLLM's CPU tier keeps one copy of a latent every TP rank holds whole, else
                # one a rank, TP x PP (at the groups' block size: a Mamba hybrid's is the
                # model's, 1,312 tokens for Nemotron-Nano, not --block-size's 16)
                add_cpu_tier(view, kv_offloading_size, kv_offloading_block_size,
                             view.data["block_size"],
                             tier_copies(tensor_parallel_size, mla, pipeline_parallel_size),
                             result.config.kv_cache_groups)
            from kvcli.config_warnings import config_warnings
            from kvcli.given_params import given_params

            given = {p.name for p in given_params(ctx)}
            for name, value in (("async_scheduling", async_scheduling),
                                ("enable_chunked_prefill", enable_chunked_prefill),
                                ("pad_pages", pad_pages)):
                if value is False and name in given:
                    given ^= {name, f"no_{name}"}                       # the flag as typed
            warnings = config_warnings(result, given, gpu_memory_gib=gpu_memory_gib,
                                       max_model_len=max_model_len, block_size=bs,
                                       block_size_given=block_size is not None,
                                       enable_prefix_caching=result.enable_prefix_caching,
                                       offloading=kv_offloading_size is not None,
                                       performance_mode=performance_mode)
            warnings += [f"option {output.flag(k)}: {why}" for k, why in
                         (result.mm.notes if result.mm is not None else ())]
            if (spec := spec_budget_warning(limits.max_num_batched_tokens, spec_k)) is not None:
                # (vLLM's, after a draft's lowering of max_model_len: VllmConfig's order)
                warnings.insert(1 if result.draft_limit is not None else 0, spec)
            if result.draft is not None and result.draft.method == "mtp":
                from kvcore.models.mtp_draft import reuse_warning

                if (reuse := reuse_warning(result.draft.architecture, spec_k)) is not None:
                    warnings.insert(0, reuse)       # (vLLM's first, as it resolves the method)
            warnings[:0] = renamed                  # (before it: vLLM's very first word)
            for w in warnings:
                output.warn(w)
            view.data["warnings"] = warnings
            output.emit(view, as_json=as_json)

        output.run(go)


def spec_draft(text: str | None, method: str | None, model: str | None, tokens: int | None,
               warn: Callable[[str], None] | None = None,
               ) -> tuple[tuple[str | None, str] | None, int, frozenset[str]]:
    """The draft vLLM's speculative flags name, as (model, method): an EAGLE draft's, or MTP's
    (None: the model's own module); None with no flags, or n-gram (no layers, no weights);
    num_speculative_tokens (0 without drafts), which a Mamba layer's spec keeps blocks for
    whatever the method; and the options the JSON set (a refusal names its key). An EAGLE
    method without its model is refused, as vLLM refuses it."""
    from kvcore.engine.options import ReplayOptions
    from kvcore.engine.spec_config import (
        EAGLE_METHODS,
        at_json_key,
        set_by_json,
        speculative_settings,
    )
    from kvcore.engine.spec_decode import spec_draft as known_draft
    from kvcore.errors import InputError

    if text is None and method is None and model is None and tokens is None:
        return None, 0, frozenset()
    spec = speculative_settings(text or "{}", method, tokens, model, warn)
    from_json = set_by_json(spec, {"spec_method": method, "num_speculative_tokens": tokens,
                                   "spec_model": model})
    try:
        draft = known_draft(ReplayOptions(**spec))       # (the replay's rule)
    except InputError as err:
        raise at_json_key(err, from_json) from None
    if draft is None and spec["spec_method"] in EAGLE_METHODS:
        raise InputError(f"{spec['spec_method']} needs its draft model (--spec-model, or the "
                         "JSON's model), as vLLM does",
                         field=("speculative_config.model" if "spec_method" in from_json
                                else "spec_model"))
    return draft, int(spec["num_speculative_tokens"]), from_json


def concurrent_batches(async_scheduling: bool | None, given: int | None, pp: int = 1) -> int:
    """Batches in flight: --max-concurrent-batches, or vLLM's --[no-]async-scheduling (on: 2,
    off: 1; neither: 2, vLLM's on a GPU); both, they must agree. With `pp` pipeline stages,
    vLLM's `max_concurrent_batches`: pp + 1 under async scheduling (the V2 model runner), pp
    without."""
    from kvcore.engine.scheduler_io import max_concurrent_batches
    from kvcore.errors import InputError

    on = max_concurrent_batches(True, pp)
    implied = None if async_scheduling is None else max_concurrent_batches(async_scheduling, pp)
    if given is not None and implied is not None and given != implied:
        flag = "--async-scheduling" if async_scheduling else "--no-async-scheduling"
        raise InputError(f"{given} disagrees with {flag} ({implied} batch"
                         f"{'es' if implied > 1 else ''} in flight); give one",
                         field="max_concurrent_batches")
    return given if given is not None else implied if implied is not None else on
