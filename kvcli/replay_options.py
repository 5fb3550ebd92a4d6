"""The replay's options as Typer declarations, for every command that replays (`replay`, `stats`).

One `Annotated` alias per `ReplayOptions` field; the flag is the field's name in kebab case. The
choices come from kvcore's tables and the defaults shown in the help from `ReplayOptions` itself.
Every option defaults to None ("not given"), so that a trace's config line can fill what the
user left out. A command takes them all with `@with_replay_options()` and receives one
`opts: ReplayOptions`; a new knob is a `ReplayOptions` field and one entry in `_SPEC`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any

import typer

from kvcli import output
from kvcore.engine.options import (
    ARRIVALS,
    ENGINE_NUM_BLOCKS,
    MODES,
    PERFORMANCE_MODES,
    ReplayOptions,
)
from kvcore.engine.queues import QUEUES
from kvcore.engine.serve_defaults import rows_text
from kvcore.engine.spec_config import check_method, set_by_json, speculative_settings
from kvcore.hashing import HASH_FUNCTIONS
from kvcore.offload.config import DTYPE_BYTES
from kvcore.vllm_values import (
    KV_CACHE_DTYPES,
    kv_cache_dtype,
    kv_offloading_backend,
    retention_interval,
)

_R = "Replay"   # help panels
_O = "CPU offload (vLLM's native tier, docs/offload.md)"
_S = "Scheduler (vLLM names)"
_C = "Simulated clock"
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


# vLLM's switches off by default that `vllm serve` spells --x/--no-x, as kvcli does then
_PAIRED = frozenset({"long_prefill_token_threshold_adaptive"})


def _plain_flag(name: str, kind: Any) -> bool:
    """A switch off by default (`--skip-bad`): a plain flag, False when left off (not given)."""
    return kind is bool and getattr(D, name) is False and name not in _PAIRED


def _option(name: str, kind: Any, panel: str, help: str) -> Any:
    """The option of field `name`: `--name-in-kebab-case` (`--x/--no-x` for a switch that may be
    on by default), its help ending with the field's default unless the help says its own."""
    flag = output.flag(name)
    default = getattr(D, name)
    plain = _plain_flag(name, kind)
    if kind is bool and not plain:
        flag = f"{flag}/--no-{flag[2:]}"
    # the default last, in typer's own style (as its other options show theirs)
    text, said, own_default = help.partition(" [default: ")
    help = text + "." + (f" [default: {own_default}" if said else "")
    if not said and (kind is not bool or default is True):
        shown = {True: "on", False: "off"}.get(default, default) \
            if isinstance(default, bool) else default
        help = f"{help} [default: {shown}]"
    value_type = kind if plain else kind | None
    return Annotated[value_type, typer.Option(flag, *ALIASES.get(name, ()), help=help,
                                              rich_help_panel=panel, show_default=False,
                                              metavar=_METAVARS.get(name))]


# Values typer cannot show by their type
_METAVARS = {"prefix_cache_retention_interval": "0|N|dense",
             "kv_cache_dtype": "|".join(KV_CACHE_DTYPES)}
# vLLM 0.33's spellings of options kvcli first named otherwise (`vllm serve`'s flags, copied
# from a server's command line); kvcli's own names stay, for the scripts that use them
ALIASES: dict[str, tuple[str, ...]] = {
    "num_blocks": ("--num-gpu-blocks-override",),
    "hash_algo": ("--prefix-caching-hash-algo",),
    "policy": ("--scheduling-policy",),
    "tp": ("--tensor-parallel-size", "-tp"),
    "pipeline_parallel_size": ("--pp", "-pp"),
    "num_speculative_tokens": ("--spec-tokens",),
    "gpu_memory_utilization": ("--device-memory-utilization",),
}


# Field -> (type, help panel, help): the only list of the replay's options on the CLI side.
_SPEC: dict[str, tuple[Any, str, str]] = {
    "mode": (Mode, _R, ("engine: vLLM's scheduler step by step; cache: one request at a time "
             "(lookup, allocate, free)")),
    "block_size": (int, _R, "Tokens per KV block, unless the trace's config line says"),
    "num_blocks": (int, _R, ("vLLM's num_gpu_blocks, the null block included [default: engine "
                   f"{ENGINE_NUM_BLOCKS} or the model's at --gpu-memory-gib; cache: room for "
                   "every block]")),
    "warmup": (float, _R, "Fraction of requests (arrival order) left out of the hit rate"),
    "hash_algo": (HashAlgo, _R, "Block hash (vLLM's prefix_caching_hash_algo)"),
    "hash_seed": (str, _R, ("vLLM's PYTHONHASHSEED: the seed of the first block's parent hash, "
                  "for event hashes equal to a server's that set it [default: vLLM's fixed "
                  "seed, its own for sha256 without PYTHONHASHSEED]")),
    "enable_prefix_caching": (bool, _R, "Prefix caching"),
    "skip_bad": (bool, _R, ("Skip requests that can never fit (counted as rejected) "
                 "instead of stopping")),
    "model": (str, _R, ("Model preset (see `kvcli config`): its KV cache groups; with "
              "--gpu-memory-gib also num_blocks; its max_model_len unless given [default: none]")),
    "model_config": (str, _R, "A Hugging Face config.json instead of a preset [default: none]"),
    "gpu_memory_gib": (float, _R, ("With a model: size num_blocks from this much GPU memory "
                       "[default: none]")),
    "gpu_memory_utilization": (float, _R, ("With --gpu-memory-gib: the fraction vLLM may use "
                               "(vLLM 0.33's default)")),
    "max_num_seqs": (int, _S, ("Requests running at once (the default is SchedulerConfig's; "
                     "with --gpu or --calibration, vllm serve's on that GPU: "
                     f"{rows_text('max_num_seqs')})")),
    "max_num_batched_tokens": (int, _S, ("Token budget per step (the default is "
                               "SchedulerConfig's; with --gpu or --calibration, vllm serve's on "
                               f"that GPU: {rows_text('max_num_batched_tokens')})")),
    "max_model_len": (int, _S, ("A prompt this long or longer can never run (an error, or "
                      "skipped with --skip-bad); a request stops at it "
                      "[default: the model's, else no limit]")),
    "long_prefill_token_threshold": (int, _S, ("Cap on one request's tokens per step when other "
                                     "requests run or wait (0 = off)")),
    "long_prefill_token_threshold_adaptive": (bool, _S, (
        "vLLM's: the long-prefill cap at least the token budget / the requests queued and "
        "running (with a threshold only) [default: off]")),
    "max_num_active_seqs": (int, _S, ("vLLM's: requests admitted into running at most, <= "
                            "--max-num-seqs (smaller decode batches) [default: none, "
                            "--max-num-seqs]")),
    "policy": (Policy, _S, "Scheduling policy"),
    "performance_mode": (PerformanceMode, _S, ("vLLM's: throughput doubles the budget and "
                         "max_num_seqs where not given; interactivity changes only CUDA "
                         "graphs, which kvcli does not model")),
    "watermark": (float, _S, "Fraction of blocks kept free when admitting"),
    "enable_chunked_prefill": (bool, _S, "Chunked prefill"),
    "scheduler_reserve_full_isl": (bool, _S, "Admission needs room for the whole prompt"),
    "prefix_cache_retention_interval": (str, _S, (
        "vLLM's retention for sliding-window and Mamba groups: 0 caches only the blocks a later hit can "
        "use (vLLM's default), N one window tail per N tokens, 'dense' every full block "
        "[default: 0]")),
    "prefix_match_unit": (int, _S, ("vLLM's --prefix-match-unit: hash requests every N "
                          "tokens, a divisor of every KV cache group's block; finer than a "
                          "Mamba block, prefix hits land inside blocks [default: the block]")),
    "async_scheduling": (bool, _S, ("vLLM's async scheduling (a batch queue of 2, as `vllm "
                         "serve` runs on a GPU): finishes, frees and decode-completed blocks "
                         "come one step later")),
    "pipeline_parallel_size": (int, _S, ("vLLM's pipeline-parallel size: a batch queue of PP "
                               "batches (PP + 1 under async scheduling; a request decodes "
                               "every PP-th step), and with a model each stage's pool, the "
                               "smallest for all")),
    "num_speculative_tokens": (int, _S, ("vLLM's speculative decoding (--speculative-config's "
                               "num_speculative_tokens), method --spec-method: each decode "
                               "step verifies 1 + this many tokens; needs "
                               "--spec-acceptance-rate [default: 0, off]")),
    "spec_method": (str, _S, ("vLLM's --spec-method: ngram, or eagle / eagle3 / mtp (K "
                    "lookahead slots, lookahead block hashes; an EAGLE draft sized from "
                    "--spec-model, mtp from the model's own module)")),
    "spec_model": (str, _S, ("EAGLE's draft model (vLLM's --spec-model): a config.json, its "
                   "folder, or a draft kvcli knows (eagle3-llama-3.1-8b); sizing from a model "
                   "counts its layers and weights [default: none]")),
    "disable_lookahead_block_hashes": (bool, _S, ("EAGLE: vLLM's legacy block hashes and the "
                                       "EAGLE block drop instead of lookahead hashes (set by "
                                       "--speculative-config's key)")),
    "spec_acceptance_rate": (float, _S, ("kvcli's model of the drafts' fate: each draft is "
                             "accepted with this chance until the first rejection (a replay "
                             "has no text to judge them by) [default: none]")),
    "spec_seed": (int, _S, "Seed of the acceptance draws (a run is repeatable)"),
    "arrivals": (Arrivals, _C, ("timestamp: by trace time on the simulated clock; ignore: all "
                 "at once; step: at each request's integer arrival_step")),
    "step_overhead_ms": (float, _C, "Fixed cost of one engine step, ms"),
    "prefill_ms_per_token": (float, _C, "Cost of one prefill token, ms"),
    "decode_ms_per_seq": (float, _C, "Cost of one decoding sequence, ms"),
    "clock": (str, _C, ("roofline (from --model and --gpu), calibrated (from --calibration), "
              "linear:C0,C1,C2 (ms a step, a "
              "prefill token, a decoding request) or fixed:MS [default: roofline with a model "
              "and a GPU, else linear from the three options above]")),
    "gpu": (str, _C, ("GPU preset the roofline clock times (see `kvcli clock gpus`); the "
            "pool is sized by --gpu-memory-gib, not by this [default: none]")),
    "calibration": (str, _C, ("A `kvcli calibrate --gpu` file: the calibrated clock (its "
                    "measured ceilings and fitted factors) [default: none]")),
    "tp": (int, _C, "Tensor-parallel size the clock times (and the model's KV heads per GPU)"),
    "kv_cache_dtype": (str, _C, ("vLLM's --kv-cache-dtype (auto: the model's); its "
                       "other dtypes are refused, not modelled")),
    "kv_offloading_size": (float, _O, ("vLLM's --kv-offloading-size: a CPU tier of this many "
                           "GiB, engine or cache mode [default: none, no tier]")),
    "kv_offloading_size_chunks": (int, _O, ("The CPU tier's size in chunks instead [default: "
                                  "none]")),
    "offload_block_size": (int, _O, ("Tokens per CPU chunk, a multiple of the block size "
                           "[default: the block size]")),
    "eviction_policy": (OffloadPolicy, _O, "The CPU tier's eviction policy"),
    "offload_prompt_only": (bool, _O, "Store prompt chunks only (vLLM's default), not decode KV"),
    "store_threshold": (int, _O, "Store a chunk on its N-th offer (< 2: on the first)"),
    "sync_load_budget_bytes": (int, _O, ("Bytes per step loaded inside the step (0: every "
                               "load asynchronous)")),
    "load_steps": (int, _O, "Engine steps an asynchronous load takes (--arrivals step)"),
    "store_steps": (int, _O, "Engine steps a store takes from its submission"),
    "offload_bandwidth_gbps": (float, _O, ("On the simulated clock: transfers take bytes / "
                               "this many GB/s each way (64: PCIe 5.0 x16)")),
    "num_layers": (int, _O, "KV geometry for bytes per block: layers"),
    "num_kv_heads": (int, _O, "KV geometry: KV heads (per rank)"),
    "head_size": (int, _O, "KV geometry: head size"),
    "kv_dtype": (KvDtype, _O, "KV geometry: dtype"),
}
OPTIONS: dict[str, Any] = {name: _option(name, *spec) for name, spec in _SPEC.items()}
# vLLM's flags that choose what kvcli has one of: read so that a server's command line runs,
# checked, and not kept (no `ReplayOptions` field: the one value kvcli models is its default)
CHECKED_ONLY = {"kv_offloading_backend": kv_offloading_backend}
OPTIONS["kv_offloading_backend"] = Annotated[str | None, typer.Option(
    "--kv-offloading-backend", metavar="native|lmcache", rich_help_panel=_O, show_default=False,
    help="vLLM's CPU tier backend: native is the tier kvcli models; lmcache is refused. "
    "[default: native]")]
OPTIONS["speculative_config"] = Annotated[str | None, typer.Option(
    "--speculative-config", "-sc", metavar="JSON", rich_help_panel=_S, show_default=False,
    help="vLLM's speculative decoding config: method ngram, eagle, eagle3 or mtp, its "
    "num_speculative_tokens and (EAGLE) model, disable_lookahead_block_hashes; other methods "
    "and keys are refused. [default: none]")]
_PLAIN_FLAGS = frozenset(name for name, (kind, _, _) in _SPEC.items() if _plain_flag(name, kind))
# for commands that take only the model options (`kvcli script`)
ModelOpt, ModelConfigOpt, GpuMemOpt = (OPTIONS[k]
                                       for k in ("model", "model_config", "gpu_memory_gib"))



def read_files(trace: str, opts: Any) -> list[tuple[str, str | None]]:
    """The files a replay reads (`output.check_distinct`'s inputs): the trace, and the model
    config and calibration files its options name."""
    return [("the trace", trace),
            ("--model-config's file", getattr(opts, "model_config", None)),
            ("--calibration's file", getattr(opts, "calibration", None))]


def replay_options(params: dict[str, Any]) -> ReplayOptions:
    """The `ReplayOptions` of the replay options' values: those the user gave (not None),
    enums as their values; the rest stay defaults."""
    given = {k: (v.value if isinstance(v, Enum) else v) for k, v in params.items()
             if v is not None and not (k in _PLAIN_FLAGS and v is False)}   # a flag left off
    spec_json: frozenset[str] = frozenset()
    for name, check in CHECKED_ONLY.items():
        if name in given:
            check(given.pop(name))
    if "speculative_config" in given:
        # (vLLM's EngineArgs merges --spec-method and --spec-tokens into the JSON)
        flags = {k: given.pop(k, None) for k in ("spec_method", "num_speculative_tokens",
                                                  "spec_model")}
        spec = speculative_settings(given.pop("speculative_config"), *flags.values())
        given.update(spec)
        spec_json = set_by_json(spec, flags)
    elif "spec_method" in given:
        given["spec_method"] = check_method(given["spec_method"], "spec_method")
    if "kv_cache_dtype" in given:      # vLLM's names (and kvcli's fp16, bf16); not modelled: why
        given["kv_cache_dtype"] = kv_cache_dtype(given["kv_cache_dtype"])
    if "prefix_cache_retention_interval" in given:
        given["prefix_cache_retention_interval"] = retention_interval(
            given["prefix_cache_retention_interval"])
    return ReplayOptions(**given, given=frozenset(given), spec_json=spec_json)


def with_replay_options(first: bool = True) -> Callable[[Callable], Callable]:
    """A Typer command decorator: the command gets every replay option (after its arguments
    when `first`, else after its own options) and receives them as one `opts: ReplayOptions`.
    Typer reads the new signature; the command declares only its own parameters."""
    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn, eval_str=True)
        own = [p for p in sig.parameters.values() if p.name != "opts"]
        extra = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=alias,
                                   default=False if name in _PLAIN_FLAGS else None)
                 for name, alias in OPTIONS.items()]
        at = sum(1 for p in own if p.default is inspect.Parameter.empty) if first else len(own)
        params = own[:at] + extra + own[at:]

        @functools.wraps(fn)
        def command(**kw: Any) -> Any:
            values = {name: kw.pop(name) for name in OPTIONS}
            opts = output.run(lambda: replay_options(values))    # a bad value: one line, exit 2
            return fn(**kw, opts=opts)

        command.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params])
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command
    return wrap
