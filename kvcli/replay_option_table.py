"""The replay's options, each with its type, help panel and help text: the only list of them
on the CLI side (`kvcli.replay_options` makes them Typer options). A new knob is a
`ReplayOptions` field and one entry in `SPEC`."""

from __future__ import annotations

from enum import Enum
from typing import Any

from kvcore.engine.options import (
    ARRIVALS,
    ENGINE_NUM_BLOCKS,
    MODES,
    PERFORMANCE_MODES,
    ReplayOptions,
)
from kvcore.engine.queues import QUEUES
from kvcore.engine.serve_defaults import rows_text
from kvcore.hashing import HASH_FUNCTIONS
from kvcore.mm_options import MM_ENCODER_TP_MODES
from kvcore.offload.config import DTYPE_BYTES

REPLAY = "Replay"   # help panels
OFFLOAD = "CPU offload (vLLM's native tier, docs/offload.md)"
SCHED = "Scheduler (vLLM names)"
CLOCK = "Simulated clock"
D = ReplayOptions()


def _choices(name: str, values) -> type[Enum]:
    return Enum(name, {v: v for v in values}, type=str)  # type: ignore[return-value]


Mode = _choices("Mode", MODES)
Arrivals = _choices("Arrivals", ARRIVALS)
Policy = _choices("Policy", QUEUES)
PerformanceMode = _choices("PerformanceMode", PERFORMANCE_MODES)
HashAlgo = _choices("HashAlgo", HASH_FUNCTIONS)
OffloadPolicy = _choices("OffloadPolicy", ("lru", "arc"))
KvDtype = _choices("KvDtype", DTYPE_BYTES)
MmEncoderTpMode = _choices("MmEncoderTpMode", MM_ENCODER_TP_MODES)


# Field -> (type, help panel, help): the only list of the replay's options on the CLI side.
SPEC: dict[str, tuple[Any, str, str]] = {
    "mode": (Mode, REPLAY, ("engine: vLLM's scheduler step by step; cache: one request at a time "
             "(lookup, allocate, free)")),
    "block_size": (int, REPLAY, "Tokens per KV block, unless the trace's config line says"),
    "num_blocks": (int, REPLAY, ("vLLM's num_gpu_blocks, the null block included [default: engine "
                   f"{ENGINE_NUM_BLOCKS} or the model's at --gpu-memory-gib; cache: room for "
                   "every block]")),
    "warmup": (float, REPLAY, "Fraction of requests (arrival order) left out of the hit rate"),
    "hash_algo": (HashAlgo, REPLAY, "Block hash (vLLM's prefix_caching_hash_algo)"),
    "hash_seed": (str, REPLAY, ("vLLM's PYTHONHASHSEED: the seed of the first block's parent hash, "
                  "for event hashes equal to a server's that set it [default: vLLM's fixed "
                  "seed, its own for sha256 without PYTHONHASHSEED]")),
    "enable_prefix_caching": (bool, REPLAY, ("Prefix caching [default: on; off for an "
                              "attention-free model, as vLLM]")),
    "skip_bad": (bool, REPLAY, ("Skip requests that can never fit (counted as rejected) "
                 "instead of stopping")),
    "model": (str, REPLAY, ("Model preset (see `kvcli config`): its KV cache groups; with "
              "--gpu-memory-gib also num_blocks; its max_model_len unless given [default: none]")),
    "model_config": (str, REPLAY, "A Hugging Face config.json instead of a preset [default: none]"),
    "gpu_memory_gib": (float, REPLAY, ("With a model: size num_blocks from this much GPU memory "
                       "[default: none]")),
    "limit_mm_per_prompt": (str, REPLAY, ("vLLM's: items a prompt may hold by modality, JSON "
                            "('{\"image\": 0}', or --limit-mm-per-prompt.image 0); a model's "
                            "vision tower whose modalities are all 0 is not built, its weights "
                            "left to KV blocks [default: none, 999 each]")),
    "language_model_only": (bool, REPLAY, ("vLLM's: every modality's limit 0, no vision tower "
                            "built [default: off]")),
    "mm_encoder_tp_mode": (MmEncoderTpMode, REPLAY, ("vLLM's: data holds the vision tower whole "
                           "on every TP rank (Qwen3.5; Gemma 3 falls back to weights, split "
                           "over TP)")),
    "gpu_memory_utilization": (float, REPLAY, ("With --gpu-memory-gib: the fraction vLLM may use "
                               "(vLLM 0.33's default)")),
    "max_num_seqs": (int, SCHED, ("Requests running at once (the default is SchedulerConfig's; "
                     "with --gpu or --calibration, vllm serve's on that GPU: "
                     f"{rows_text('max_num_seqs')})")),
    "max_num_batched_tokens": (int, SCHED, ("Token budget per step (the default is "
                               "SchedulerConfig's; with --gpu or --calibration, vllm serve's on "
                               f"that GPU: {rows_text('max_num_batched_tokens')})")),
    "max_model_len": (int, SCHED, ("A prompt this long or longer can never run (an error, or "
                      "skipped with --skip-bad); a request stops at it "
                      "[default: the model's, else no limit]")),
    "long_prefill_token_threshold": (int, SCHED, ("Cap on one request's tokens per step when other "
                                     "requests run or wait (0 = off)")),
    "long_prefill_token_threshold_adaptive": (bool, SCHED, (
        "vLLM's: the long-prefill cap at least the token budget / the requests queued and "
        "running (with a threshold only) [default: off]")),
    "max_num_active_seqs": (int, SCHED, ("vLLM's: requests admitted into running at most, <= "
                            "--max-num-seqs (smaller decode batches) [default: none, "
                            "--max-num-seqs]")),
    "policy": (Policy, SCHED, "Scheduling policy"),
    "performance_mode": (PerformanceMode, SCHED, ("vLLM's: throughput doubles the budget and "
                         "max_num_seqs where not given; interactivity changes only CUDA "
                         "graphs, which kvcli does not model")),
    "watermark": (float, SCHED, "Fraction of blocks kept free when admitting"),
    "enable_chunked_prefill": (bool, SCHED, "Chunked prefill"),
    "scheduler_reserve_full_isl": (bool, SCHED, "Admission needs room for the whole prompt"),
    "prefix_cache_retention_interval": (str, SCHED, (
        "vLLM's retention for sliding-window and Mamba groups: 0 caches only the blocks a later hit can "
        "use (vLLM's default), N one window tail per N tokens, 'dense' every full block "
        "[default: 0]")),
    "prefix_match_unit": (int, SCHED, ("vLLM's --prefix-match-unit: hash requests every N "
                          "tokens, a divisor of every KV cache group's block; finer than a "
                          "Mamba block, prefix hits land inside blocks [default: the block]")),
    "enable_mamba_shared_prefix_checkpoint": (bool, SCHED, (
        "vLLM's opt-in --enable-mamba-shared-prefix-checkpoint: a Mamba state also at the "
        "shared-prefix junction a later sibling resumes at, not only at the prompt's end. "
        "Changes nothing (as in vLLM) without an EAGLE-family draft (eagle, eagle3, mtp) and "
        "partial hits (--prefix-match-unit finer than a Mamba block). With a CPU tier the "
        "junction's state is stored and loaded as a partial tail, as vLLM does [default: off]")),
    "async_scheduling": (bool, SCHED, ("vLLM's async scheduling (a batch queue of 2, as `vllm "
                         "serve` runs on a GPU): finishes, frees and decode-completed blocks "
                         "come one step later")),
    "pipeline_parallel_size": (int, SCHED, ("vLLM's pipeline-parallel size: a batch queue of PP "
                               "batches (PP + 1 under async scheduling; a request decodes "
                               "every PP-th step), and with a model each stage's pool, the "
                               "smallest for all")),
    "num_speculative_tokens": (int, SCHED, ("vLLM's speculative decoding (--speculative-config's "
                               "num_speculative_tokens), method --spec-method: each decode "
                               "step verifies 1 + this many tokens; needs "
                               "--spec-acceptance-rate [default: 0, off]")),
    "spec_method": (str, SCHED, ("vLLM's --spec-method: ngram, or eagle / eagle3 / mtp (K "
                    "lookahead slots, lookahead block hashes; an EAGLE draft sized from "
                    "--spec-model, mtp from the model's own module)")),
    "spec_model": (str, SCHED, ("EAGLE's draft model (vLLM's --spec-model): a config.json, its "
                   "folder, or a draft kvcli knows (eagle3-llama-3.1-8b); sizing from a model "
                   "counts its layers and weights [default: none]")),
    "disable_lookahead_block_hashes": (bool, SCHED, ("EAGLE: vLLM's legacy block hashes and the "
                                       "EAGLE block drop instead of lookahead hashes (set by "
                                       "--speculative-config's key)")),
    "spec_acceptance_rate": (float, SCHED, ("kvcli's model of the drafts' fate: each draft is "
                             "accepted with this chance until the first rejection (a replay "
                             "has no text to judge them by) [default: none]")),
    "spec_seed": (int, SCHED, "Seed of the acceptance draws (a run is repeatable)"),
    "arrivals": (Arrivals, CLOCK, ("timestamp: by trace time on the simulated clock; ignore: all "
                 "at once; step: at each request's integer arrival_step")),
    "step_overhead_ms": (float, CLOCK, "Fixed cost of one engine step, ms"),
    "prefill_ms_per_token": (float, CLOCK, "Cost of one prefill token, ms"),
    "decode_ms_per_seq": (float, CLOCK, "Cost of one decoding sequence, ms"),
    "clock": (str, CLOCK, ("roofline (from --model and --gpu), calibrated (from --calibration), "
              "linear:C0,C1,C2 (ms a step, a "
              "prefill token, a decoding request) or fixed:MS [default: roofline with a model "
              "and a GPU, else linear from the three options above]")),
    "gpu": (str, CLOCK, ("GPU preset the roofline clock times (see `kvcli clock gpus`); the "
            "pool is sized by --gpu-memory-gib, not by this [default: none]")),
    "calibration": (str, CLOCK, ("A `kvcli calibrate --gpu` file: the calibrated clock (its "
                    "measured ceilings and fitted factors) [default: none]")),
    "tp": (int, CLOCK, "Tensor-parallel size the clock times (and the model's KV heads per GPU)"),
    "kv_cache_dtype": (str, CLOCK, ("vLLM's --kv-cache-dtype (auto: the model's); its "
                       "other dtypes are refused, not modelled")),
    "kv_offloading_size": (float, OFFLOAD, ("vLLM's --kv-offloading-size: a CPU tier of this many "
                           "GiB, engine or cache mode [default: none, no tier]")),
    "kv_offloading_size_chunks": (int, OFFLOAD, ("The CPU tier's size in chunks instead [default: "
                                  "none]")),
    "offload_block_size": (int, OFFLOAD, ("Tokens per CPU chunk, a multiple of the block size "
                           "[default: the block size]")),
    "eviction_policy": (OffloadPolicy, OFFLOAD, "The CPU tier's eviction policy"),
    "offload_prompt_only": (bool, OFFLOAD, "Store prompt chunks only (vLLM's default), not decode KV"),
    "store_threshold": (int, OFFLOAD, "Store a chunk on its N-th offer (< 2: on the first)"),
    "sync_load_budget_bytes": (int, OFFLOAD, ("Bytes per step loaded inside the step (0: every "
                               "load asynchronous)")),
    "load_steps": (int, OFFLOAD, "Engine steps an asynchronous load takes (--arrivals step)"),
    "store_steps": (int, OFFLOAD, "Engine steps a store takes from its submission"),
    "offload_bandwidth_gbps": (float, OFFLOAD, ("On the simulated clock: transfers take bytes / "
                               "this many GB/s each way (64: PCIe 5.0 x16)")),
    "num_layers": (int, OFFLOAD, "KV geometry for bytes per block: layers"),
    "num_kv_heads": (int, OFFLOAD, "KV geometry: KV heads (per rank)"),
    "head_size": (int, OFFLOAD, "KV geometry: head size"),
    "kv_dtype": (KvDtype, OFFLOAD, "KV geometry: dtype"),
}
