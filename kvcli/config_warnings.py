"""`kvcli config`'s warnings: what the sizing assumes about the GPU (an MLA model's block size, a
Gated DeltaNet prefill kernel, a length past the model's), and the options given that change
nothing in this combination (they printed the same table as without them, unsaid). Each is one
line on stderr and in the JSON's `warnings` (docs/config.md)."""

from __future__ import annotations

from typing import Any

# Options that only shape the memory the pool is sized from (`--gpu-memory-gib`).
_MEMORY = ("gpu_memory_utilization", "weights_gib", "activation_gib")
# Options that only change groups other than full attention's.
_HYBRID = ("disable_hybrid", "no_pad_pages")
# (`no_async_scheduling`: --no-async-scheduling, as the caller names the flag typed)
_IN_FLIGHT = ("max_concurrent_batches", "async_scheduling", "no_async_scheduling")
# The step budget and what derives it (vLLM raises a default budget to max_num_seqs)
_BUDGET = ("max_num_batched_tokens", "enable_chunked_prefill", "no_enable_chunked_prefill",
           "max_num_seqs", "gpu", "performance_mode")


def _flags(names: list[str]) -> str:
    from kvcli.output_failures import flag

    return ", ".join(flag(n) for n in names)


def config_warnings(result: Any, given: set[str], *, gpu_memory_gib: float | None,
                    max_model_len: int | None, block_size: int, block_size_given: bool,
                    enable_prefix_caching: bool, offloading: bool,
                    performance_mode: str = "balanced") -> list[str]:
    """The warnings for a sizing `result` (`resolve_kv_cache_config`) of the options `given`
    on the command line (their parameter names)."""
    from kvcore.engine.serve_defaults import BATCH_OPTIONS, idle_mode_reason
    from kvcore.models.context_limit import long_context_note
    from kvcore.models.int_quant_rank import unmodelled_note
    from kvcore.models.mla import mla_block_size_note
    from kvcore.models.multimodal_classes import uncounted_tower_note
    from kvcore.models.pangu_sinks import sink_start_note
    from kvcore.models.qwen3_next import gdn_note
    from kvcore.models.rnj1 import RNJ1, backend_note
    from kvcore.models.unlimited_ocr import caching_forced_off, caching_note
    from kvcore.models.vllm_registry import unregistered_note

    g = result.geometry
    # (vLLM's own, where a draft lowers the length: `kvcore.sizing.draft_len`)
    out = [result.draft_limit.warning()] if result.draft_limit is not None else []
    out += result.planning_warnings     # (vLLM's next, as its engine plans the groups)
    if note := unregistered_note(g.architecture):      # (a typo is not sized silently)
        out.append(note)
    if note := long_context_note(g, max_model_len):
        out.append(note)
    if note := sink_start_note(g):     # (vLLM plans the pool, then fails to start)
        out.append(note)
    # (not for Kimi Linear's hybrid: its block is a multiple of 128 holding a KDA state,
    # whatever the backend's own)
    if g.mla is not None and g.mla.indexer is None and not block_size_given and g.mamba is None:
        out.append(mla_block_size_note(g.name, block_size))
    if g.architecture == RNJ1:
        out.append(backend_note())
    if g.mamba is not None and g.mamba.version == "gdn" and enable_prefix_caching:
        k = max((getattr(grp.kv_cache_spec, "num_speculative_blocks", 0)
                 for grp in result.config.kv_cache_groups), default=0)
        out.append(gdn_note(g.name, k))
    memory = [n for n in _MEMORY if n in given]
    if memory and gpu_memory_gib is None:
        out.append(f"option(s) {_flags(memory)}: no effect without --gpu-memory-gib (the pool "
                   "is --num-blocks, not sized from memory)")
    if gpu_memory_gib is not None and result.weights_estimated and g.model_type == "custom":
        # --layers/--kv-heads/--head-dim give no MLP and no vocabulary: "0.02 GiB" of weights
        out.append(f"weights estimated from --layers, --kv-heads and --head-dim alone "
                   f"({result.weights_bytes / (1 << 30):.2f} GiB: no MLP, no vocabulary), so "
                   "the KV memory is overstated: give --weights-gib")
    if gpu_memory_gib is not None and result.weights_estimated and (note := unmodelled_note(
            g, "--gpu-memory-gib", "--num-blocks", "--weights-gib")):
        out.append(note)   # (awq and gptq are sized; compressed-tensors and the rest are not)
    if gpu_memory_gib is not None and result.weights_estimated and "num_blocks" not in given \
            and (note := uncounted_tower_note(g, result.mm, "--gpu-memory-gib", "--num-blocks",
                                              "--weights-gib")):
        out.append(note)   # (a multimodal class whose tower kvcli does not count)
    kinds = set(g.layer_kinds) - {"mlp"}           # (an MLP-only layer holds no KV)
    hybrid = [n for n in _HYBRID if n in given]
    if hybrid and len(kinds) == 1 and kinds != {"parallel"}:   # (Falcon-H1's: two specs)
        out.append(f"option(s) {_flags(hybrid)}: no effect on {g.name}, whose layers are all "
                   f"{next(iter(kinds))} (one kind: nothing to pad or to keep apart)")
    elif "no_pad_pages" in given:
        # (sized at all, nothing needed padding: Gemma 3's pages divide one another; where a
        # page does not divide, --no-pad-pages refuses, vLLM 0.13's rule)
        out.append(f"option --no-pad-pages: no effect on {g.name} (no attention page needs "
                   "padding: the pages divide one another)")
    # (2 batches in flight is the default, vLLM's async scheduling: restated, nothing changes,
    # and nothing is said, as for any option given its default)
    in_flight = [n for n in _IN_FLIGHT if n in given and result.ctx.max_concurrent_batches != 2]
    batch = set(BATCH_OPTIONS) <= given
    if "gpu" in given and batch:
        # (the GPU gives only the batch defaults: config sizes nothing else from it)
        out.append("option --gpu: no effect: --max-num-batched-tokens and --max-num-seqs are "
                   "given, and it gives only their defaults (the memory is --gpu-memory-gib)")
    why_idle = idle_mode_reason(performance_mode, given)
    if "performance_mode" in given and why_idle:
        out.append(f"option --performance-mode {performance_mode}: no effect here: {why_idle}")
    # (llama-3.1-8b: the same table; a GPU or a mode whose warning came above is not repeated)
    in_flight += [n for n in _BUDGET if n in given and not (
        (n == "gpu" and batch) or (n == "performance_mode" and (
            why_idle or performance_mode == "balanced")))]
    if in_flight and not kinds & {"sliding", "chunked"}:
        out.append(f"option(s) {_flags(in_flight)}: no block count of {g.name}'s depends on "
                   "it: only sliding-window and chunked-local groups reserve blocks for the "
                   "tokens in flight (the scheduler line and max_in_flight_tokens follow it)")
    if "kv_offloading_backend" in given and not offloading:
        # (a replay warns the same; vLLM's value names are still checked)
        out.append("option --kv-offloading-backend: no effect without --kv-offloading-size "
                   "(the CPU tier it moves)")
    if caching_forced_off(g.architecture):     # (vLLM's config hook, whatever is asked)
        out.append(caching_note(g.name))
    elif "enable_prefix_caching" in given and not enable_prefix_caching and g.mamba is None \
            and "prefix_match_unit" not in given:
        # (a Mamba model's cache mode and a unit's hashing depend on it; a replay's hits do)
        out.append(f"option --no-enable-prefix-caching: no effect on {g.name}'s sizing (only a "
                   "Mamba model's cache and a --prefix-match-unit depend on it here; a replay's "
                   "hits do)")
    if "prefix_match_unit" in given and not enable_prefix_caching and not offloading:
        out.append("option --prefix-match-unit: no effect with prefix caching off and no CPU "
                   "tier (no block is hashed)")
    return out
