"""One call from "a model on a GPU" to a `KVCacheConfig` and the figures around it.

`resolve_kv_cache_config(...)` is what `kvcli config`, the replay and the curve command share.
The model comes from exactly one of: ``model`` (a preset name or its HF repo id),
``model_config`` (path to a Hugging Face config.json), ``geometry`` (a `ModelGeometry`), or the
explicit flags ``layers``/``kv_heads``/``head_dim`` (+ ``sliding_window``/``sliding_layers``):
`kvcore.sizing.model_source` turns that choice into a `ModelGeometry`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

from kvcore.errors import InputError
from kvcore.mm_options import MMOptions
from kvcore.models.deepseek_v4 import unindexed_refused_layer
from kvcore.models.drafts import load_spec_draft
from kvcore.models.dtypes import DTYPE_ALIASES, check_float_kv_cache
from kvcore.models.eagle_draft import draft_layer_specs
from kvcore.models.geometry import ModelGeometry
from kvcore.models.mamba_only import prefix_caching
from kvcore.models.mm_serving import apply_mm
from kvcore.models.moe_required import refuse_moe_free
from kvcore.models.quantization import auto_kv_dtype
from kvcore.models.rope_cache import served_in
from kvcore.models.sparse_mla import DS_MLA, stored_kv_dtype
from kvcore.models.weights import estimate_weights_bytes
from kvcore.models.worker_specs import DEFAULT_BLOCK_SIZE, layer_specs
from kvcore.prefix_match import resolve_block_sizes
from kvcore.sizing.buffers_term import buffer_bytes, buffers_text
from kvcore.sizing.config import (
    GiB,
    NotEnoughMemory,
    bytes_per_block,
    capacity,
    check_enough_memory,
    kv_cache_config_from_groups,
)
from kvcore.sizing.draft_len import limit_to_draft, longest_accepted
from kvcore.sizing.grouping import (
    PageSizeError,
    UnifyError,
    get_kv_cache_groups,
    unpaddable_page_words,
)
from kvcore.sizing.model_source import load_geometry, normalize_dtype
from kvcore.sizing.option_ranges import (
    MIN_MAX_MODEL_LEN,
    check_counts,
    check_int_at_least,
    check_memory_options,
    check_positive_int,
)
from kvcore.sizing.packing import block_outermost
from kvcore.sizing.pipeline import PipelineStage, pipeline_stages
from kvcore.sizing.result import SizingResult
from kvcore.sizing.stage_specs import stage_specs
from kvcore.sizing.tp_refusals import refuse_tp
from kvcore.sizing_context import DEFAULT_GPU_MEMORY_UTILIZATION, DEFAULT_MAX_NUM_BATCHED_TOKENS
from kvcore.specs import DTYPE_BYTES, SizingContext

KV_CACHE_DTYPES = {"auto": "auto", "fp8": "fp8", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2",
                   DS_MLA: DS_MLA, **DTYPE_ALIASES}


def resolve_kv_cache_config(
    model: str | None = None, *, model_config: str | None = None,
    geometry: ModelGeometry | None = None, layers: int | None = None,
    kv_heads: int | None = None, head_dim: int | None = None, dtype: str | None = None,
    sliding_window: int | None = None, sliding_layers: str | None = None,
    attention_chunk_size: int | None = None, chunked_layers: str | None = None,
    gpu_memory_gib: float | None = None, gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
    weights_gib: float | None = None, activation_gib: float = 0.0,
    kv_cache_dtype: str = "auto", block_size: int | None = None,
    max_model_len: int | None = None,
    max_num_batched_tokens: int = DEFAULT_MAX_NUM_BATCHED_TOKENS, max_concurrent_batches: int = 2,
    num_blocks: int | None = None, tensor_parallel_size: int = 1, disable_hybrid: bool = False,
    pad_pages: bool = True, enable_prefix_caching: bool | None = True, check_memory: bool = True,
    prefix_match_unit: int | None = None, pipeline_parallel_size: int = 1,
    draft: tuple[str | None, str] | None = None, num_speculative_tokens: int = 0,
    mm: MMOptions | None = None,
    startup_check: Callable[[ModelGeometry, int], None] | None = None,
) -> SizingResult:
    """Size the KV cache of a model on one GPU (per tensor-parallel worker).

    Available KV memory = gpu_memory_gib * 2^30 * gpu_memory_utilization - weights - buffers
    - activation (estimated unless ``weights_gib``, which holds both, is given; divided over
    ``tensor_parallel_size`` workers). ``num_blocks`` overrides the count (then ``gpu_memory_gib``
    may be omitted, and weights kvcli does not estimate are not asked for). ``dtype`` overrides
    the model dtype. InputError (exit 2): an unknown model, an unreadable config, bad numbers,
    pages that cannot be unified, too little memory for one request at max_model_len (both sizes
    and the largest max_model_len that fits). ``draft``: a speculative method's draft, (an EAGLE
    draft's model or None for MTP, the method), its layers and weights counted with the model's
    (`kvcore.models.drafts`). ``num_speculative_tokens``: K (0: none), for Mamba specs' blocks.
    ``block_size``: --block-size, None when not given (vLLM's default, which it raises for
    some backends where an explicit size stays or is refused: `layer_specs`).
    ``startup_check(geometry, max_model_len)``: the caller's start-up refusals, met before
    anything is built or sized from memory, as vLLM meets them (its scheduler's limits, its
    input processor's multimodal item budget); the length before a draft lowers it.
    """
    g = load_geometry(model, model_config=model_config, geometry=geometry, layers=layers,
                      kv_heads=kv_heads, head_dim=head_dim, dtype=dtype,
                      sliding_window=sliding_window, sliding_layers=sliding_layers,
                      attention_chunk_size=attention_chunk_size, chunked_layers=chunked_layers)
    if dtype is not None and layers is None:
        served = normalize_dtype(dtype, "dtype")    # (its RoPE caches follow it: `served_in`)
        g = replace(g, dtype=served, rope_caches=served_in(g.rope_caches, g.dtype, served))
    g, mm_state = apply_mm(g, mm)
    enable_prefix_caching = prefix_caching(g, enable_prefix_caching)  # (None: vLLM's default)
    kv_dtype = normalize_dtype(auto_kv_dtype(g, kv_cache_dtype), "kv_cache_dtype", KV_CACHE_DTYPES)
    if kv_dtype not in ("auto", DS_MLA) and kv_dtype not in DTYPE_BYTES:
        raise InputError(f"unsupported KV cache dtype {kv_cache_dtype!r}", field="kv_cache_dtype")
    check_float_kv_cache(kv_dtype, g.dtype)
    check_counts(block_size=DEFAULT_BLOCK_SIZE if block_size is None else block_size,
                 max_num_batched_tokens=max_num_batched_tokens,
                 tensor_parallel_size=tensor_parallel_size,
                 pipeline_parallel_size=pipeline_parallel_size,
                 max_concurrent_batches=max_concurrent_batches)
    refuse_moe_free(g)      # (a MoE class whose dense-layer keys cover every layer)
    refuse_tp(g, tensor_parallel_size, dtype is not None and layers is None)
    if g.v4 is not None and disable_hybrid:     # (vLLM's promotion of its states: unrecorded)
        raise InputError("kvcli does not size DeepSeek-V4 with the hybrid KV cache manager "
                         "disabled (unchecked against vLLM)", field="disable_hybrid")
    check_memory_options(gpu_memory_gib, weights_gib, activation_gib, gpu_memory_utilization)
    tp = tensor_parallel_size
    # (vLLM's default: the RoPE-scaled length, LongRoPE's original one; `default_len`)
    mml = max_model_len if max_model_len is not None else g.default_max_model_len
    check_int_at_least(mml, MIN_MAX_MODEL_LEN, "max_model_len")   # (the commands' words)
    if prefix_match_unit is not None:
        check_positive_int(prefix_match_unit, "prefix_match_unit")
    # (`load_spec_draft` refuses what kvcli does not size and what vLLM refuses to start with)
    spec_draft = None if draft is None else load_spec_draft(draft[0], draft[1], g,
                                                            num_speculative_tokens or 1)
    if startup_check is not None:
        startup_check(g, mml)
    mml, limit = limit_to_draft(spec_draft, mml)
    ctx = SizingContext(max_model_len=mml, max_num_batched_tokens=max_num_batched_tokens,
                        max_concurrent_batches=max_concurrent_batches,
                        mamba_cache_mode="align" if enable_prefix_caching else "none")
    # (a draft's attention layers sit on the worker too: vLLM's platform finds them and aligns
    # the Mamba layers of a target that has none; without one, the target's layers decide)
    specs = layer_specs(g, block_size=block_size, kv_cache_dtype=kv_dtype, tp=tp,
                        max_model_len=mml, mamba_cache_mode=ctx.mamba_cache_mode,
                        prefix_match_unit=prefix_match_unit,
                        num_speculative_tokens=num_speculative_tokens,
                        attention_free=False if spec_draft is not None else None)
    if g.v4 is not None and (layer := unindexed_refused_layer(g.v4, {n: s.page_size_bytes
                                                                      for n, s in specs.items()})):
        # (vLLM names the layer under its model's prefix, "model.")
        why = unpaddable_page_words(f"model.{layer}")
        raise InputError(f"vLLM 0.33 refuses to start: \"{why}\"", field="model")
    if spec_draft is not None:
        # (beside a Mamba hybrid, the attention block vLLM raised for the target's pages: its
        # platform raises cache_config.block_size once both models are loaded, and every
        # attention layer, the draft's too, reads it when asked its spec; get_kv_cache_groups
        # then unifies a draft page of another size, recorded in tests/data/sizing_vllm)
        attn_block = max((s.block_size for s in specs.values() if s.kind != "mamba"),
                         default=DEFAULT_BLOCK_SIZE if block_size is None else block_size)
        specs.update(draft_layer_specs(spec_draft, g, block_size=attn_block,
                                       kv_cache_dtype=kv_dtype, tp=tp, max_model_len=mml))
    if pipeline_parallel_size > 1 and g.mamba is not None:
        # (a stage of Mamba layers alone keeps them unaligned: `kvcore.sizing.stage_specs`)
        stage_of = partial(layer_specs, g, block_size=block_size, kv_cache_dtype=kv_dtype,
                           tp=tp, max_model_len=mml, mamba_cache_mode=ctx.mamba_cache_mode,
                           prefix_match_unit=prefix_match_unit,
                           num_speculative_tokens=num_speculative_tokens)
        specs = stage_specs(g, specs, stage_of(attention_free=True), pipeline_parallel_size,
                            stage_of(gdn_prefill_checkpoint=False))
    planning: list[str] = []
    try:
        groups = get_kv_cache_groups(specs, disable_hybrid=disable_hybrid, pad_pages=pad_pages,
                                     block_outermost=block_outermost(g), warn=planning.append)
    except (PageSizeError, ValueError, AssertionError) as err:
        raise InputError(str(err), field="disable_hybrid" if isinstance(err, UnifyError)
                         else "model") from None
    try:
        resolve_block_sizes([grp.kv_cache_spec for grp in groups], prefix_match_unit,
                            enable_prefix_caching)
    except ValueError as err:
        raise InputError(f"vLLM refuses to start: {err}", field="prefix_match_unit") from None
    if weights_gib is None and g.weights_unmodelled and gpu_memory_gib is None:
        weights_gib = 0.0
    estimated = weights_gib is None
    draft_weights = spec_draft.weights_bytes(tp) if spec_draft is not None else 0
    weights = (estimate_weights_bytes(g, tp) + draft_weights if weights_gib is None
               else int(weights_gib * GiB / tp))
    buffers = (buffer_bytes(g, tp, spec_draft, mml, batched_tokens=max_num_batched_tokens)
               if estimated else 0)    # (weights_gib: in it)
    per_block = bytes_per_block(groups)
    stages: list[PipelineStage] = []
    check_groups = groups
    if pipeline_parallel_size > 1:
        stages = pipeline_stages(g, groups, tp, pipeline_parallel_size, weights_gib,
                                 gpu_memory_gib, gpu_memory_utilization, activation_gib,
                                 num_blocks, draft_weights, spec_draft, mml,
                                 max_num_batched_tokens)
        least = min(stages, key=lambda st: (st.num_blocks, st.index))
        weights, buffers = least.weights_bytes, least.buffers_bytes
        per_block, check_groups = least.bytes_per_block, least.groups
    if num_blocks is not None and num_blocks < 1:
        raise InputError(f"must be at least 1 (the null block), got {num_blocks}",
                         field="num_blocks")
    if num_blocks is None and gpu_memory_gib is None:
        raise InputError("needed to size the KV cache (or give num_blocks)",
                         field="gpu_memory_gib")
    # A replay (check_memory False) takes num_blocks as the pool whatever the memory, and says
    # so in a warning: the memory is not its to refuse then
    memory_sized = gpu_memory_gib is not None and (num_blocks is None or check_memory)
    if memory_sized and gpu_memory_gib is not None:
        budget = int(gpu_memory_gib * GiB * gpu_memory_utilization)
        available = budget - weights - buffers - int(activation_gib * GiB)
        if available <= 0:
            raise InputError(
                f"no memory left for the KV cache: {gpu_memory_gib:g} GiB x "
                f"{gpu_memory_utilization:g} = {budget / GiB:.2f} GiB, weights "
                f"{weights / GiB:.2f} GiB{' (estimated)' if estimated else ''}"
                + (f", buffers {buffers_text(buffers)}" if buffers else "")
                + (f" per worker (tensor parallel {tp})" if tp > 1 else "")
                + (f" on pipeline stage {least.index}" if stages else "")
                + (f", activations {activation_gib:g} GiB" if activation_gib else "")
                + f"; short by {-available / GiB:.2f} GiB", field="gpu_memory_gib")
    memory = available if memory_sized else None
    if num_blocks is not None:
        available = num_blocks * per_block      # the override's pool is what vLLM allocates
        if check_memory and memory is not None and available > memory:
            # vLLM overrides its count and then fails allocating the tensors (out of memory);
            # the memory lines would have claimed the GPU holds them
            raise InputError(
                f"{num_blocks:,} blocks need {available / GiB:,.2f} GiB of KV cache, more than "
                f"the {memory / GiB:,.2f} GiB left of {gpu_memory_gib:g} GiB (vLLM would fail "
                f"allocating them); at most {memory // per_block:,} fit", field="num_blocks")
    if stages and num_blocks is None and memory_sized:
        num_blocks = least.num_blocks       # every worker's pool: the smallest (vLLM's rule)
    if check_memory:
        try:
            check_enough_memory(check_groups, ctx, available)
        except NotEnoughMemory as err:
            # no usable block at all (block 0 is the null block): no max_model_len helps, the
            # blocks are too large for the memory (`--block-size 1e11` was blamed on the length)
            # (and --num-blocks 1, one null block, was blamed on the block size)
            field = ("max_model_len" if err.available > 0 or available <= 0
                     else "num_blocks" if num_blocks is not None else "block_size")
            raise InputError(str(err), field=field) from None
    config = kv_cache_config_from_groups(groups, available, num_blocks)
    cap = capacity(config, ctx, available, longest_accepted(g, spec_draft, mml))
    if stages:
        cap = cap._replace(bytes_per_block=per_block)
    return SizingResult(config, ctx, g, available if memory is None else memory, weights,
                        estimated, cap, stored_kv_dtype(g, kv_dtype),
                        prefix_match_unit, enable_prefix_caching, tuple(stages), spec_draft,
                        draft_weights, mm_state, least.index if stages else None, buffers, limit,
                        tuple(planning))
