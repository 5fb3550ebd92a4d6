"""The warnings a replay can decide from its options and its trace alone, before the first step:
options with no effect in this combination, a pool not sized from the GPU, an out-of-order trace.
Each is one line, in the summary's `warnings` and on stderr (docs/replay.md, "Warnings")."""

from __future__ import annotations

from kvcore.engine import serve_defaults
from kvcore.engine.options import ReplayOptions
from kvcore.engine.refusal import named, where_set
from kvcore.engine.spec_config import EAGLE_METHODS, deprecated_warning
from kvcore.engine.spec_decode import spec_draft
from kvcore.models.geometry import ModelGeometry
from kvcore.models.int_quant_rank import unmodelled_note
from kvcore.models.mm_serving import MMState
from kvcore.models.mtp_draft import MTP_CLASSES, reuse_warning
from kvcore.models.multimodal_classes import uncounted_tower_note
from kvcore.models.vllm_registry import unregistered_note
from kvcore.offload.settings import GEOMETRY, steps_time_transfers, unused_tier_options
from kvcore.specs import ChunkedLocalAttentionSpec, KVCacheGroupSpec, SlidingWindowSpec
from kvcore.traces import Trace, out_of_order_warning

# Options that only the engine mode's scheduler and clock read.
ENGINE_ONLY = frozenset({"max_num_seqs", "long_prefill_token_threshold",
                         "long_prefill_token_threshold_adaptive", "policy",
                         "scheduler_reserve_full_isl", "enable_chunked_prefill",
                         "max_num_active_seqs", "arrivals", "step_overhead_ms",
                         "prefill_ms_per_token", "decode_ms_per_seq", "max_steps",
                         "async_scheduling", "clock", "gpu", "performance_mode"})
# A CPU tier's options that time its transfers (cache mode has no time).
TIER_TIMING = frozenset({"load_steps", "store_steps", "sync_load_budget_bytes",
                         "offload_bandwidth_gbps", "offload_prompt_only"})


def start_warnings(cfg: ReplayOptions, trace: Trace, geometry: ModelGeometry | None = None,
                   groups: list[KVCacheGroupSpec] | tuple = (),
                   mm: MMState | None = None) -> list[str]:
    """The warnings, in this order, for the resolved (sized) options `cfg` over `trace`;
    ``geometry``: the options' model as the start-up read it (`StartUp.geometry`); ``groups``:
    the KV cache groups it built (`StartUp.groups`); ``mm``: what the sizing built under the
    multimodal options (`StartUp.mm`)."""
    # (vLLM's first word on a deprecated name of mtp that a config line or a grid gave)
    out = [] if cfg.spec_method_renamed is None else [deprecated_warning(cfg.spec_method_renamed)]
    late = out_of_order_warning(trace.out_of_order)
    if late and not (cfg.mode == "engine" and cfg.arrivals == "step"):
        out.append(late)
    for key, read in trace.near_misses:
        out.append(f"{trace.label}:{trace.near_miss_line}: field {key!r} is not read (did you mean "
                   f"{read!r}? it is taken as absent)")
    given = cfg.given or frozenset()
    # what the config line set, under kvcli's names whichever spelling the line used (the
    # warnings below ask of kvcli's names: `prefix_caching_hash_algo` was never seen)
    lined = trace.config_keys
    user = given | set(lined)               # a flag or the trace's config line
    model = cfg.model or cfg.model_config
    if "gpu_memory_gib" in given and not model:
        out.append("option gpu_memory_gib has no effect without a model (model or "
                   "model_config): num_blocks is not sized from memory")
    if "gpu_memory_utilization" in given and (not model or cfg.gpu_memory_gib is None
                                              or "num_blocks" in user):
        # (it is a share of gpu_memory_gib, which sizes the pool only from a model; a pool
        # the config line gave is named there, as the line spells it: num_gpu_blocks_override)
        pool = named(["num_blocks"], trace, cfg) if "num_blocks" in user else "num_blocks"
        out.append("option gpu_memory_utilization has no effect unless the pool is sized from "
                   f"a model's gpu_memory_gib (not with {pool})")
    if geometry is not None and (note := unregistered_note(geometry.architecture)):
        out.append(note)        # (read as vLLM's Transformers backend would: a typo is said)
    if geometry is not None and cfg.gpu_memory_gib is not None and "num_blocks" not in user \
            and (note := unmodelled_note(geometry, "gpu_memory_gib", "num_blocks")):
        out.append(note)        # (the pool sized from weights counted in the model dtype)
    if geometry is not None and cfg.gpu_memory_gib is not None and "num_blocks" not in user \
            and (note := uncounted_tower_note(geometry, mm, "gpu_memory_gib", "num_blocks")):
        out.append(note)        # (the pool sized without a multimodal class's tower)
    clock = (cfg.clock or "").partition(":")[0]
    if "gpu" in given and cfg.mode == "engine" and (not model or clock in ("linear", "fixed")):
        # (in cache mode it is one of the engine's options, said below)
        why = ("without a model (model or model_config): the linear clock times the steps"
               if not model else f"with the {clock} clock: it times the steps without a GPU")
        if left := [o for o in serve_defaults.BATCH_OPTIONS if o not in user]:
            # (vllm serve's batch defaults follow the GPU: `serve_defaults`)
            values = ", ".join(f"{o} {getattr(cfg, o):,}" for o in left)
            out.append(f"option gpu sets only vllm serve's batch defaults on it ({values}) "
                       f"{why}")
        else:
            out.append(f"option gpu has no effect {why}")
    # (they size a model's pages from memory, time its steps on a GPU, and shape a CPU tier's
    # chunks: with num_blocks and the linear clock a model's run was the same, unsaid)
    idle = sorted(given & {"tp", "kv_cache_dtype"})
    on_gpu = clock in ("roofline", "calibrated") or (
        not cfg.clock and bool(cfg.calibration or (cfg.gpu and model)))
    from_memory = cfg.gpu_memory_gib is not None and "num_blocks" not in user
    # (a hybrid Mamba model's attention block is raised to its state's page, which they size:
    # Qwen3-Next's is 576 tokens at tp 1, 320 at tp 4, and the hits follow)
    mamba = geometry is not None and geometry.mamba is not None
    if idle and not cfg.offloading and not mamba and (not model or not (on_gpu or from_memory)):
        have = f"option{'s' if len(idle) > 1 else ''} {', '.join(idle)} " \
               f"{'have' if len(idle) > 1 else 'has'} no effect"
        out.append(f"{have} without a model (model or model_config) or a CPU tier" if not model
                   else f"{have} here: with the pool not sized from gpu_memory_gib, no GPU "
                   "clock (gpu or calibration) and no CPU tier, nothing depends on "
                   f"{'them' if len(idle) > 1 else 'it'}")
    steps = sorted(given & {"step_overhead_ms", "prefill_ms_per_token", "decode_ms_per_seq"})
    if steps and (clock not in ("", "linear") or ":" in (cfg.clock or "")
                  or (not cfg.clock and (cfg.calibration or (cfg.gpu and model)))):
        # they are the linear clock's constants (`linear:C0,C1,C2` spells its own)
        out.append(f"option{'s' if len(steps) > 1 else ''} {', '.join(steps)} "
                   f"{'have' if len(steps) > 1 else 'has'} no effect with the "
                   f"{cfg.clock or ('calibrated' if cfg.calibration else 'roofline')} clock "
                   "(the default linear clock's constants)")
    if model and "groups" in user:
        out.append(f"option groups{where_set(cfg, trace, 'groups')} has no effect with a model "
                   f"({cfg.model or cfg.model_config}): its layers give the KV cache groups")
    if model and cfg.offloading and (geometry_keys := sorted(set(lined) & set(GEOMETRY))):
        # The same keys as flags are refused (`offload_config`), but the oracle's CPU tier
        # cases carry all four on every config line (its fake worker's geometry): refused, such
        # a trace could not be replayed against a model without editing it. Dropped as a
        # config line's groups are, and said. (Without a tier the tier's warning says them.)
        out.append(f"option(s) {named(geometry_keys, trace, cfg)}: no effect with a model "
                   f"({cfg.model or cfg.model_config}): its layers give the CPU tier's KV "
                   "geometry (bytes per block)")
    if cfg.long_prefill_token_threshold_adaptive and not cfg.long_prefill_token_threshold \
            and cfg.mode == "engine":
        # vLLM floors a nonzero threshold only: with none, the switch changes nothing
        out.append(f"option {named(['long_prefill_token_threshold_adaptive'], trace, cfg)} has "
                   "no effect without long_prefill_token_threshold (0: no cap to floor)")
    if ("gpu" in user and model and cfg.mode == "engine" and clock not in ("linear", "fixed")
            and not user & {"num_blocks", "gpu_memory_gib"}):
        # vllm serve sizes its pool from the memory CUDA reports, which is not the datasheet's
        # "80 GB" (about 79 GiB on an H100 80GB): that number stays the user's to give
        out.append(f"option gpu times the steps but does not size the KV pool: it is the "
                   f"default {cfg.num_blocks:,} blocks; give gpu_memory_gib (the memory CUDA "
                   "reports) or num_blocks for the pool vllm serve would have")
    if (capped := capped_outputs_note(cfg, trace)) is not None:
        out.append(capped)
    if geometry is not None:
        out.extend(_model_notes(cfg, geometry, "block_size" not in user,
                                "enable_prefix_caching" not in user))
    if "performance_mode" in user and cfg.mode == "engine" and (
            why_idle := serve_defaults.idle_mode_reason(cfg.performance_mode, user)):
        out.append(f"option performance_mode {cfg.performance_mode}"
                   f"{where_set(cfg, trace, 'performance_mode')}: no effect here: {why_idle}")
    if model and (note := serve_defaults.unnamed_note(cfg, user)) is not None:
        # (the scheduler's values a real server on that memory would not start with)
        out.append(note)
    if model and {"gpu_memory_gib", "num_blocks"} <= user:
        # num_blocks wins (vLLM's num_gpu_blocks_override); the memory sized nothing
        out.append(f"option gpu_memory_gib has no effect with {named(['num_blocks'], trace, cfg)}"
                   f": the pool is its {cfg.num_blocks:,} blocks, not sized from the memory")
    hashing = sorted(user & {"hash_algo", "hash_seed", "prefix_match_unit"})
    if hashing and not cfg.enable_prefix_caching and not cfg.offloading:
        # vLLM hashes a request's blocks only for the prefix cache or a KV connector (a config
        # line's keys too: the run was the same without them)
        out.append(f"option{'s' if len(hashing) > 1 else ''} {named(hashing, trace, cfg)} "
                   f"{'have' if len(hashing) > 1 else 'has'} no effect with prefix caching "
                   "off and no CPU tier: no block is hashed")
    if (drafts := sorted(user & {"spec_acceptance_rate", "spec_seed", "spec_method",
                                 "spec_model", "disable_lookahead_block_hashes",
                                 "eagle_groups"})) \
            and not cfg.num_speculative_tokens:
        out.append(f"option(s) {named(drafts, trace, cfg)}: no effect without speculative "
                   "decoding (num_speculative_tokens, or speculative_config)")
    elif (eagle_only := sorted(user & {"spec_model", "eagle_groups"}) + (
            ["disable_lookahead_block_hashes"] if cfg.disable_lookahead_block_hashes else [])) \
            and cfg.spec_method == "ngram":
        out.append(f"option(s) {named(eagle_only, trace, cfg)}: no effect with method ngram "
                   "(no draft model; its hashes have no lookahead)")
    elif "spec_model" in user and cfg.spec_method == "mtp":
        out.append(f"option {named(['spec_model'], trace, cfg)}: no effect with method mtp "
                   "(its draft is the model's own MTP module)")
    elif "spec_model" in user and not model:
        out.append(f"option {named(['spec_model'], trace, cfg)}: no effect without a model "
                   "(the draft's layers and weights count in a pool sized from one)")
    elif cfg.spec_method in EAGLE_METHODS and spec_draft(cfg) is None and on_gpu:
        # (the pool was given: the draft was not needed to size it, but the clock needs it)
        out.append(f"the {cfg.spec_method} drafter's passes are not in the step times: give "
                   "its draft model (spec_model) to time them")
    if cfg.spec_method == "mtp" and geometry is not None \
            and (reuse := reuse_warning(MTP_CLASSES.get(geometry.model_type, ""),
                                        cfg.num_speculative_tokens)):
        out.append(reuse)       # (vLLM logs it where it builds the module; kvcli sized it)
    out += _mm_warnings(cfg, mm, given, user)
    if unused_tier := unused_tier_options(cfg, lined):
        out.append(f"option(s) {named(unused_tier, trace, cfg)}: no effect without a CPU "
                   "tier (kv_offloading_size or kv_offloading_size_chunks)")
    if cfg.mode == "cache":
        # (the step budget sizes a window's in-flight blocks, and vLLM's start-up check reads
        # it in every mode: a sliding or chunked group's run may pass or fail on it)
        windowed = any(isinstance(g.kv_cache_spec, SlidingWindowSpec | ChunkedLocalAttentionSpec)
                       for g in groups)
        budget = {"max_num_batched_tokens"} if not (from_memory or windowed) else set()
        # (a trace's config line sets them too: the oracle's cases carry the scheduler's)
        unused = sorted(user & (ENGINE_ONLY | budget))
        if unused:
            out.append(f"option(s) {named(unused, trace, cfg)}: no effect in cache mode (no "
                       "scheduler, no clock; requests run one at a time)")
        if cfg.offloading and (timing := sorted(user & TIER_TIMING)):
            out.append(f"option(s) {named(timing, trace, cfg)}: no effect in cache mode (no "
                       "time: a load or a store completes at once; only prompt chunks are "
                       "offered)")
    elif cfg.offloading and steps_time_transfers(cfg):
        if "offload_bandwidth_gbps" in user:
            out.append("option offload_bandwidth_gbps has no effect: transfers take load_steps / "
                       "store_steps steps (arrivals step, or the step counts given)")
    elif cfg.offloading and (steps := sorted(set(lined) & {"load_steps", "store_steps"})):
        # (the oracle's cases carry them for its fake worker: on the clock they are not read)
        out.append(f"option(s) {named(steps, trace, cfg)}: no effect on the simulated "
                   "clock: transfers take their bytes over offload_bandwidth_gbps (the flags, or "
                   "arrivals step, use step counts)")
    return out


def _model_notes(cfg: ReplayOptions, g: ModelGeometry, default_block_size: bool,
                 default_caching: bool = False) -> list[str]:
    """What the model's sizing assumes about the GPU: an MLA model's block size (vLLM picks it
    by attention backend) when the replay runs at the default one, the Gated DeltaNet prefill
    kernel (FlashInfer's, Hopper) in align mode, an attention-free model's prefix caching off
    by vLLM's default (``default_caching``: no option or config line set it)."""
    from kvcore.clock.gpus import find_gpu
    from kvcore.models.context_limit import long_context_note
    from kvcore.models.mamba_only import is_attention_free
    from kvcore.models.mla import mla_backend_block_size, mla_block_size_note
    from kvcore.models.quantization import auto_kv_dtype
    from kvcore.models.qwen3_next import gdn_note
    from kvcore.models.unlimited_ocr import caching_forced_off, caching_note

    notes = [n for n in (long_context_note(g, cfg.max_model_len),) if n]
    if caching_forced_off(g.architecture):     # (whatever the options or the line said)
        notes.append(caching_note(g.name))
    # (a hybrid MLA model's block, Kimi Linear's: a multiple of 128 that holds a KDA state,
    # whatever the backend's own block)
    if g.mla is not None and g.mla.indexer is None and default_block_size and g.mamba is None:
        # (a ModelOpt checkpoint's "auto": its KV cache algorithm, which picks the backend)
        kv = auto_kv_dtype(g, cfg.kv_cache_dtype)
        picked = mla_backend_block_size(cfg.gpu and find_gpu(cfg.gpu).name, kv)
        if picked is None:
            notes.append(mla_block_size_note(g.name, cfg.block_size))
        elif picked[1] != cfg.block_size:
            # (the GPU is known: say what vLLM picks there, not the whole table)
            notes.append(f"{g.name} uses MLA: on {cfg.gpu} with kv_cache_dtype "
                         f"{kv} vLLM 0.33 picks {picked[0]}, block_size "
                         f"{picked[1]}; sized at block_size {cfg.block_size}: give block_size "
                         f"{picked[1]}")
    if g.mamba is not None and g.mamba.version == "gdn" and cfg.enable_prefix_caching:
        notes.append(gdn_note(g.name, cfg.num_speculative_tokens))
    if default_caching and is_attention_free(g) and not cfg.enable_prefix_caching:
        # (vLLM's default for the model, taken when no option or config line set it: a hit
        # rate of 0 that the user did not ask for is said)
        notes.append(f"{g.name} is attention-free: vLLM serves it with prefix caching off "
                     "unless asked (every hit rate 0; option enable_prefix_caching turns it on)")
    return notes


def capped_outputs_note(cfg: ReplayOptions, trace: Trace) -> str | None:
    """The requests whose prompt and output pass max_model_len: vLLM's scheduler finishes each
    at max_model_len tokens (`FINISHED_LENGTH_CAPPED`), and so does the replay, but an output of
    10^9 tokens cut to a model's 131,072 went unsaid (a trace's lengths read as what ran)."""
    limit = cfg.max_model_len
    if cfg.mode != "engine" or limit is None or trace.max_total_tokens <= limit:
        return None
    tail = ("each stops there, as vLLM's scheduler stops it (length-capped), with fewer "
            "output tokens than the trace's (the requests' generated_tokens)")
    if not isinstance(trace.requests, list) and trace.max_prompt_tokens < limit:
        # (a long trace not held: its longest only, which no prompt past the limit can be, so
        # it is capped; else it may be a refused prompt's, and the file is read once more)
        return (f"requests ask more tokens than max_model_len {limit:,} (prompt + output, up "
                f"to {trace.max_total_tokens:,}): {tail}")
    # (a prompt of max_model_len or more is refused, or skipped, not capped; counted, not
    # listed: a trace not held is read request by request)
    first, n = None, 0
    for tr in trace.requests:
        if tr.prompt_len < limit < tr.prompt_len + tr.output_len:
            first, n = first or tr, n + 1
    if first is None:
        return None
    return (f"{n:,} request(s) ask more tokens than max_model_len {limit:,} (prompt + "
            f"output; the first, {trace.label}:{first.line}: {first.prompt_len:,} + "
            f"{first.output_len:,}): {tail}")


def _mm_warnings(cfg: ReplayOptions, mm: MMState | None, given: frozenset[str],
                 user: set[str] | frozenset[str]) -> list[str]:
    """vLLM's multimodal serving options given where they change nothing: they change a
    model's weights, which only a pool sized from its memory reads; on such a model, the notes
    the sizing left in its `MMState` (`kvcore.models.mm_serving`: a text-only model, a modality
    it lacks, Gemma 3's data mode)."""
    mm_given = sorted(given & {"limit_mm_per_prompt", "language_model_only",
                               "mm_encoder_tp_mode"})
    if not mm_given:
        return []
    if not (cfg.model or cfg.model_config) or cfg.gpu_memory_gib is None or "num_blocks" in user:
        return [(f"option(s) {', '.join(mm_given)}: no effect on the pool unless it is sized "
                 "from a model's gpu_memory_gib (they change the model's weights)")]
    if mm is None:
        return []
    return [f"option {k}: {why}" for k, why in mm.notes]
