"""`ReplayOptions`: the one list of a replay's knobs (`kvcli replay`, `kvcli stats`, curves).

Each field carries its real default and, in its metadata, what it accepts: `choices` taken from
kvcore's own tables, a `check` rule, and `config=True` when a trace's first line
`{"config": {...}}` may set it (the scheduler oracle's names). `given` records the fields the
caller set; `resolve` fills every other `config` field from the trace's config line and returns the
same type, validated. The scheduler's and the clock's settings are built from it by field name
(`build`), so their defaults are written once, where those classes are declared.

Adding a knob: a field here (with its default and rule), its option alias in
`kvcli/replay_options.py`, and its parameter in the `replay` and `stats` commands.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from kvcore.clock.kv_dtypes import KV_CACHE_DTYPES
from kvcore.engine.cost import CostModel
from kvcore.engine.option_rules import check_value
from kvcore.engine.queues import QUEUES
from kvcore.engine.scheduler import SchedulerConfig
from kvcore.engine.spec_config import EAGLE_METHODS, mtp_rename
from kvcore.errors import InputError
from kvcore.hashing import HASH_FUNCTIONS
from kvcore.mm_options import MM_ENCODER_TP_MODES
from kvcore.offload.settings import OFFLOAD_FIELDS
from kvcore.sizing.option_ranges import MIN_MAX_MODEL_LEN
from kvcore.sizing_context import DEFAULT_GPU_MEMORY_UTILIZATION
from kvcore.vllm_values import VLLM_KEYS, kv_cache_dtype_name

ENGINE_NUM_BLOCKS = 16_384          # engine mode's pool without a model or a memory size
MODES = ("engine", "cache")
ARRIVALS = ("timestamp", "ignore", "step")
PERFORMANCE_MODES = ("balanced", "interactivity", "throughput")   # vLLM 0.33's PerformanceMode
_COST = CostModel()
_SCHED = SchedulerConfig()
# Keys a trace's config line may hold that are not settings here (the oracle's).
_IGNORED_CONFIG_KEYS = frozenset({"kv_events"})


def _knob(default: Any, *, config: bool = False, choices: Any = None, check: str | None = None,
          lo: float | None = None, hi: float | None = None, message: str | None = None,
          pool: bool = False) -> Any:
    """A field with its rule: `choices` (a table's keys), or `check` = "name" (a non-empty
    string), "positive_int", "int_at_least" / "at_least" (an integer / a finite number >= `lo`), "positive" (a finite
    number > 0), "fraction" (in [0, 1)); `hi` bounds "at_least" above; `message` replaces the
    rule's wording. None passes where None is the default. With `pool`, the value is a pool's
    block count, which must also fit this machine's memory (`kvcore.host_memory`)."""
    meta = {"config": config, "choices": tuple(choices) if choices is not None else None,
            "check": check, "lo": lo, "hi": hi, "message": message, "pool": pool}
    return field(default=default, metadata=meta)


HOUR_MS = 3_600_000.0


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    mode: str = _knob("engine", choices=MODES)
    block_size: int = _knob(16, config=True, check="positive_int")
    # vLLM's num_gpu_blocks, the null block included; None: engine 16,384 (or the model's at
    # gpu_memory_gib), cache room for every prompt block
    num_blocks: int | None = _knob(None, config=True, check="int_at_least", lo=2,
                                   message="must be >= 2 (block 0 is the null block)", pool=True)
    max_num_seqs: int = _knob(_SCHED.max_num_seqs, config=True, check="positive_int")
    max_num_batched_tokens: int = _knob(_SCHED.max_num_batched_tokens, config=True,
                                        check="positive_int")
    max_model_len: int | None = _knob(None, config=True, check="int_at_least",  # None: no limit
                                      lo=MIN_MAX_MODEL_LEN)
    long_prefill_token_threshold: int = _knob(_SCHED.long_prefill_token_threshold, config=True,
                                              check="int_at_least", lo=0)
    long_prefill_token_threshold_adaptive: bool = _knob(
        _SCHED.long_prefill_token_threshold_adaptive, config=True)
    policy: str = _knob(_SCHED.policy, config=True, choices=QUEUES)
    # vLLM's --performance-mode: "throughput" doubles the batch defaults not given
    # (`sched_limits`); "interactivity" sizes CUDA graphs only, which no clock here models
    performance_mode: str = _knob("balanced", config=True, choices=PERFORMANCE_MODES)
    watermark: float = _knob(0.0, config=True, check="fraction")
    # admission needs room for the whole prompt
    scheduler_reserve_full_isl: bool = _knob(_SCHED.scheduler_reserve_full_isl, config=True)
    enable_chunked_prefill: bool = _knob(_SCHED.enable_chunked_prefill, config=True)
    # vLLM's AsyncScheduler behind a batch queue of 2, what `vllm serve` runs on a GPU (the
    # oracle's config line reads an absent key as false; kvcli defaults to vLLM's GPU default)
    async_scheduling: bool = _knob(True, config=True)
    # vLLM's --pipeline-parallel-size: its batch queue holds this many batches (one more under
    # async scheduling), and each stage sizes its own pool (`kvcore.sizing.pipeline`)
    pipeline_parallel_size: int = _knob(1, config=True, check="positive_int")
    # vLLM's speculative decoding (--speculative-config; `kvcore.engine.spec_decode`): the
    # drafts a decode verifies (0: off) and the method, ngram or eagle / eagle3 (K lookahead
    # slots; with prefix caching lookahead block hashes, or the EAGLE block drop). The
    # method is checked with the drafts (`startup.spec_refusals` says why a vLLM method is not
    # modelled, where a list of choices could not). Their outcome is kvcli's model
    # (`kvcore.engine.spec_accept`): each draft accepted with this probability until the
    # first rejection, draws seeded; no default rate (a replay has no text to judge drafts by)
    num_speculative_tokens: int = _knob(0, config=True, check="int_at_least", lo=0)
    spec_method: str = _knob("ngram", config=True, check="name")
    # EAGLE's draft model (the speculative config's `model`: a draft preset, its repo id or a
    # config.json): with a pool sized from a model its layers and weights count as vLLM's do
    # (`kvcore.models.eagle_draft`); unused with num_blocks or without a model
    spec_model: str | None = _knob(None, config=True, check="name")
    disable_lookahead_block_hashes: bool = _knob(False, config=True)
    # EAGLE over a config line's `groups`: the indices of the groups holding the draft's layers
    # (vLLM's is_eagle_group), where the legacy hash mode drops a hit's last block (none
    # named: every group); a pool sized from a model flags its draft's groups itself
    eagle_groups: tuple | None = _knob(None, config=True, check="eagle_groups")
    spec_acceptance_rate: float | None = _knob(None, config=True, check="at_least", lo=0, hi=1)
    spec_seed: int = _knob(0, config=True, check="int_at_least", lo=0)
    # KV cache groups of a token-id trace's config line, in the op scripts' spelling
    # ({"type": "full" | "sliding_window" | "chunked_local", ...}); None: one full-attention
    # group (or the model's groups)
    groups: tuple | None = _knob(None, config=True, check="groups")
    # vLLM's CacheConfig.prefix_cache_retention_interval: 0 (its default) caches in a
    # sliding-window group only the blocks a later hit can use; None dense (every full block);
    # N > 0 one window tail per N tokens
    prefix_cache_retention_interval: int | None = _knob(0, config=True, check="retention")
    enable_prefix_caching: bool = _knob(True, config=True)
    # vLLM's CacheConfig.prefix_match_unit (--prefix-match-unit): the block size requests are
    # hashed at (None: the gcd of the groups' blocks). `kvcore.prefix_match`: vLLM's refusals,
    # and kvcli's of a unit finer than a block beside groups it does not model partial hits for
    prefix_match_unit: int | None = _knob(None, config=True, check="positive_int")
    # vLLM's opt-in CacheConfig.enable_mamba_shared_prefix_checkpoint: a Mamba state also at
    # the shared-prefix junction (`kvcore.managers.mamba_partial`); only with partial hash hits
    # and an EAGLE group (vLLM's predicate), elsewhere it changes nothing, as in vLLM
    enable_mamba_shared_prefix_checkpoint: bool = _knob(False, config=True)
    max_num_active_seqs: int | None = _knob(_SCHED.max_num_active_seqs, config=True,
                                            check="positive_int")     # vLLM: ge=1
    hash_algo: str = _knob("sha256", config=True, choices=HASH_FUNCTIONS, message="unknown hash")
    # vLLM's PYTHONHASHSEED, NONE_HASH's seed. None: vLLM's fixed seed (its choice for sha256
    # without PYTHONHASHSEED; for xxhash it draws a random one no replay can match)
    hash_seed: str | None = _knob(None, config=True, check="name")
    # vLLM's multimodal serving options (`kvcore.models.mm_serving`): with a model, a vision
    # tower not built (every limit of its modalities 0) or whole on every TP rank ("data")
    limit_mm_per_prompt: str | None = _knob(None, check="mm_limits")
    language_model_only: bool = _knob(False)
    mm_encoder_tp_mode: str = _knob("weights", choices=MM_ENCODER_TP_MODES)
    arrivals: str = _knob("timestamp", choices=ARRIVALS)
    warmup: float = _knob(0.0, check="fraction")      # fraction of requests left out of hit rate
    # the simulated clock (`cost.py`)
    # (at most an hour each: 1e308 ms made the clock infinite and every latency null)
    step_overhead_ms: float = _knob(_COST.step_overhead_ms, check="at_least", lo=0, hi=HOUR_MS)
    prefill_ms_per_token: float = _knob(_COST.prefill_ms_per_token, check="at_least", lo=0,
                                        hi=HOUR_MS)
    decode_ms_per_seq: float = _knob(_COST.decode_ms_per_seq, check="at_least", lo=0, hi=HOUR_MS)
    # the clock by name (`kvcore.clock.registry`; None: roofline with a model and a GPU, else
    # linear), the GPU preset, tensor parallelism and the KV cache dtype it times
    clock: str | None = _knob(None)
    gpu: str | None = _knob(None, check="name")
    calibration: str | None = _knob(None, check="name")             # `kvcli calibrate`'s file (calibrated)
    tp: int = _knob(1, check="positive_int")
    kv_cache_dtype: str = _knob("auto", choices=KV_CACHE_DTYPES)
    skip_bad: bool = _knob(False)                     # skip requests that can never fit
    model: str | None = _knob(None, check="name")                   # a model preset: its KV cache groups
    model_config: str | None = _knob(None, check="name")            # or a HF config.json
    gpu_memory_gib: float | None = _knob(None, check="positive")  # with a model: num_blocks
    # the fraction of it vLLM may use: vLLM 0.33's default, 0.92 (docs/replay.md, vLLM's flags)
    gpu_memory_utilization: float = _knob(DEFAULT_GPU_MEMORY_UTILIZATION, check="utilization")
    max_steps: int | None = _knob(None)               # stop after this many steps (safety net)
    # vLLM's native CPU offloading (`kvcore.offload`, docs/offload.md): the tier's size in GiB
    # (vLLM's --kv-offloading-size) or, as the oracle's config line may say, in chunks
    kv_offloading_size: float | None = _knob(None, config=True, check="positive")
    kv_offloading_size_chunks: int | None = _knob(None, config=True, check="int_at_least", lo=1)
    offload_block_size: int | None = _knob(None, config=True, check="int_at_least", lo=1)
    eviction_policy: str = _knob("lru", config=True, choices=("lru", "arc"))
    offload_prompt_only: bool = _knob(True, config=True)
    store_threshold: int = _knob(0, config=True, check="int_at_least", lo=0)
    sync_load_budget_bytes: int = _knob(0, config=True, check="int_at_least", lo=0)
    # transfer times, in steps (99,999,999,999 stepped for ever, 23 us a step, without a word)
    load_steps: int = _knob(1, config=True, check="int_at_least", lo=1, hi=100_000)
    store_steps: int = _knob(1, config=True, check="int_at_least", lo=1, hi=100_000)
    # on the simulated clock (arrivals other than step): transfers take bytes / this, GB/s
    # (10^9 bytes) each way; 64 = PCIe 5.0 x16 per direction before protocol overhead. At
    # least 1 MB/s: 1e-300 made a chunk's transfer 1e306 ms, past where a float keeps steps
    # apart (kvcli cluster hung).
    offload_bandwidth_gbps: float = _knob(64.0, check="at_least", lo=0.001)
    # the KV geometry of the offloaded group (bytes per block): Llama-3-8B at TP 1 by default
    num_layers: int = _knob(32, config=True, check="positive_int")
    num_kv_heads: int = _knob(8, config=True, check="positive_int")
    head_size: int = _knob(128, config=True, check="positive_int")
    kv_dtype: str = _knob("bfloat16", config=True,
                          choices=("float16", "bfloat16", "float32", "float8_e4m3fn"))
    # The fields the caller set. Left out, it is every field that differs from its default;
    # the CLI passes exactly the options the user typed.
    given: frozenset[str] | None = None
    # Those of them `--speculative-config`'s JSON set, not their own flags: a refusal names the
    # JSON's key there, not a flag nobody typed (`kvcore.engine.spec_config.json_field`)
    spec_json: frozenset[str] = frozenset()
    # vLLM's deprecated name of mtp a trace's config line or a sweep's grid gave, which
    # `resolve` rewrites to mtp (its warning a start-up warning; the flags' is said as read)
    spec_method_renamed: str | None = None

    def __post_init__(self) -> None:
        # kvcli's older spellings (bf16) read as vLLM's name from a config line too
        object.__setattr__(self, "kv_cache_dtype", kv_cache_dtype_name(self.kv_cache_dtype))
        if self.given is None:
            object.__setattr__(self, "given", frozenset(
                f.name for f in KNOBS if getattr(self, f.name) != f.default))

    def to_dict(self) -> dict:
        """The settings (not `given`, `spec_json`), in field order: the `config` of the JSON
        outputs (the offload settings only when offloading is on, `prefix_match_unit`,
        `hash_seed` if set, `enable_mamba_shared_prefix_checkpoint` if on)."""
        d = asdict(self)
        del d["given"], d["spec_json"], d["spec_method_renamed"]
        if not self.offloading:
            for k in OFFLOAD_FIELDS:
                del d[k]
        else:
            from kvcore.offload.settings import tier_settings

            tier_settings(self, d)
        if all(d[k] == _CLOCK_DEFAULTS[k] for k in CLOCK_FIELDS):
            for k in CLOCK_FIELDS:      # (today's outputs, byte for byte, without them)
                del d[k]
        for k in ("prefix_match_unit", "hash_seed"):
            if d[k] is None:
                del d[k]        # (the same: outputs and sweep job ids unchanged)
        if not self.enable_mamba_shared_prefix_checkpoint:
            del d["enable_mamba_shared_prefix_checkpoint"]      # (the same)
        if self.gpu_memory_utilization == DEFAULT_GPU_MEMORY_UTILIZATION:
            del d["gpu_memory_utilization"]     # (the same)
        if self.performance_mode == "balanced":
            del d["performance_mode"]           # (the same)
        if self.pipeline_parallel_size == 1:
            del d["pipeline_parallel_size"]     # (the same)
        for k, default in (("limit_mm_per_prompt", None), ("language_model_only", False),
                           ("mm_encoder_tp_mode", "weights")):
            if d[k] == default:
                del d[k]                        # (the same)
        if not self.num_speculative_tokens:
            for k in SPEC_FIELDS:
                del d[k]                        # (the same)
        elif self.spec_method not in EAGLE_METHODS:
            del d["disable_lookahead_block_hashes"], d["spec_model"], d["eagle_groups"]
        else:
            for k in ("spec_model", "eagle_groups"):
                if d[k] is None:
                    del d[k]                    # (the same)
        return d

    @property
    def offloading(self) -> bool:
        return self.kv_offloading_size is not None or self.kv_offloading_size_chunks is not None


SPEC_FIELDS = ("num_speculative_tokens", "spec_method", "spec_model",
               "disable_lookahead_block_hashes", "eagle_groups", "spec_acceptance_rate",
               "spec_seed")
CLOCK_FIELDS = ("clock", "gpu", "calibration", "tp", "kv_cache_dtype")
_CLOCK_DEFAULTS = {"clock": None, "gpu": None, "calibration": None, "tp": 1,
                   "kv_cache_dtype": "auto"}
KNOBS = tuple(f for f in fields(ReplayOptions)
              if f.name not in ("given", "spec_json", "spec_method_renamed"))
CONFIG_KEYS = frozenset(f.name for f in KNOBS if f.metadata["config"])


def resolve(opts: ReplayOptions, trace_config: dict, *, path: str = "",
            config_line: int | None = None) -> ReplayOptions:
    """What the caller gave over the trace's config line over the defaults; validated. The
    line may use vLLM's names of kvcli's keys (num_gpu_blocks_override for num_blocks)."""
    for vllm_name, name in VLLM_KEYS.items():
        if vllm_name in trace_config and name in trace_config:
            raise InputError(f"{name!r} given twice, as {name!r} and as vLLM's {vllm_name!r}",
                             path=path, line=config_line, field="config")
    written = {VLLM_KEYS.get(k, k): k for k in trace_config}     # kvcli's name -> the line's
    trace_config = {VLLM_KEYS.get(k, k): v for k, v in trace_config.items()}
    unknown = set(trace_config) - CONFIG_KEYS - _IGNORED_CONFIG_KEYS
    if unknown:
        raise InputError(f"unknown key(s) {sorted(written[k] for k in unknown)}", path=path,
                         line=config_line, field="config")
    assert opts.given is not None
    fill = {k: v for k, v in trace_config.items() if k in CONFIG_KEYS and k not in opts.given}
    out = dataclasses.replace(opts, **fill) if fill else opts
    for f in KNOBS:
        try:
            check_value(f, getattr(out, f.name))
        except InputError as err:
            if f.name in fill:      # the value came from the trace's config line
                # (a null is the default only where that is none: elsewhere it was refused
                # as Python's 'got None', which no line holds)
                why = ("is null: leave the key out for the option's default (a null stands "
                       "for it only where the default is none)"
                       if fill[f.name] is None else err.message)
                raise InputError(why, path=path, line=config_line,
                                 field=f"config.{written[f.name]}") from None
            raise
    if mtp_rename(out.spec_method) is not None:     # (as the flags' is: `mtp_rename`)
        out = dataclasses.replace(out, spec_method="mtp", spec_method_renamed=out.spec_method)
    return out


def build(cls: type, opts: ReplayOptions, **overrides: Any) -> Any:
    """`cls(...)` from the options' fields of the same names (`SchedulerConfig`, `CostModel`)."""
    names = {f.name for f in fields(cls)} - set(overrides)
    return cls(**{n: getattr(opts, n) for n in names}, **overrides)
