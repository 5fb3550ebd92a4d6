"""`ReplayOptions`: every knob of a replay, shared by `kvcli replay`, `kvcli stats` and curves.

A field left at None means "not given": the trace's first line `{"config": {...}}` fills it if it
has the key (the scheduler oracle's names), else the default below. `resolve` gives the
effective values (`EffectiveConfig`), which the header, the summary and the JSON echo.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from kvcore.errors import InputError

ENGINE_NUM_BLOCKS = 16_384

DEFAULTS = {
    "block_size": 16,
    "num_blocks": None,                 # engine: 16,384 (or the model's); cache: room for all
    "max_num_seqs": 128,                # vLLM SchedulerConfig.DEFAULT_MAX_NUM_SEQS
    "max_num_batched_tokens": 2048,     # vLLM SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS
    "max_model_len": None,              # no limit unless given
    "long_prefill_token_threshold": 0,
    "long_prefill_token_threshold_adaptive": False,
    "policy": "fcfs",
    "watermark": 0.0,
    "scheduler_reserve_full_isl": True,
    "enable_chunked_prefill": True,
    "enable_prefix_caching": True,
    "max_num_active_seqs": None,
    "hash_algo": "sha256",
}
# Keys a trace's config line may hold that are not engine settings here (the oracle's).
_IGNORED_CONFIG_KEYS = {"kv_events"}


@dataclass(slots=True)
class ReplayOptions:
    mode: str = "engine"                        # engine | cache
    block_size: int | None = None
    num_blocks: int | None = None               # vLLM's num_gpu_blocks, the null block included
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    max_model_len: int | None = None
    long_prefill_token_threshold: int | None = None
    long_prefill_token_threshold_adaptive: bool | None = None
    policy: str | None = None                   # fcfs | priority
    watermark: float | None = None
    scheduler_reserve_full_isl: bool | None = None   # admission needs room for the whole prompt
    enable_chunked_prefill: bool | None = None
    enable_prefix_caching: bool | None = None
    max_num_active_seqs: int | None = None
    hash_algo: str | None = None                # sha256 | sha256_cbor | xxhash | xxhash_cbor
    arrivals: str = "timestamp"                 # timestamp | ignore | step
    warmup: float = 0.0                         # fraction of requests left out of the hit rate
    # Cost model of the simulated clock: one step takes
    #   step_overhead_ms + prefill_ms_per_token * prefill tokens + decode_ms_per_seq * decodes
    step_overhead_ms: float = 5.0
    prefill_ms_per_token: float = 0.05
    decode_ms_per_seq: float = 0.25
    skip_bad: bool = False                      # engine mode: skip requests that can never fit
    model: str | None = None                    # a model preset (sizing): its KV cache groups
    model_config: str | None = None             # or a HF config.json
    gpu_memory_gib: float | None = None         # with a model: size num_blocks from memory
    max_steps: int | None = None                # stop after this many steps (a safety net)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(slots=True)
class EffectiveConfig:
    mode: str
    block_size: int
    num_blocks: int | None
    max_num_seqs: int
    max_num_batched_tokens: int
    max_model_len: int | None
    long_prefill_token_threshold: int
    long_prefill_token_threshold_adaptive: bool
    policy: str
    watermark: float
    scheduler_reserve_full_isl: bool
    enable_chunked_prefill: bool
    enable_prefix_caching: bool
    max_num_active_seqs: int | None
    hash_algo: str
    arrivals: str
    warmup: float
    step_overhead_ms: float
    prefill_ms_per_token: float
    decode_ms_per_seq: float
    skip_bad: bool
    model: str | None
    model_config: str | None
    gpu_memory_gib: float | None
    max_steps: int | None

    def to_dict(self) -> dict:
        return asdict(self)


def resolve(opts: ReplayOptions, trace_config: dict, *, path: str = "",
            config_line: int | None = None) -> EffectiveConfig:
    """Flags over the trace's config line over the defaults; validated."""
    unknown = set(trace_config) - set(DEFAULTS) - _IGNORED_CONFIG_KEYS
    if unknown:
        raise InputError(f"unknown key(s) {sorted(unknown)}", path=path, line=config_line,
                         field="config")
    vals = {}
    for f in fields(EffectiveConfig):
        given = getattr(opts, f.name)
        if f.name in DEFAULTS and given is None:
            given = trace_config.get(f.name, DEFAULTS[f.name])
        vals[f.name] = given
    cfg = EffectiveConfig(**vals)
    _check(cfg, path, config_line)
    return cfg


def _check(c: EffectiveConfig, path: str, line: int | None) -> None:
    def bad(field: str, msg: str) -> InputError:
        return InputError(msg, field=field)

    if c.mode not in ("engine", "cache"):
        raise bad("mode", f"must be engine or cache, got {c.mode!r}")
    if c.arrivals not in ("timestamp", "ignore", "step"):
        raise bad("arrivals", f"must be timestamp, ignore or step, got {c.arrivals!r}")
    if c.policy not in ("fcfs", "priority"):
        raise bad("policy", f"must be fcfs or priority, got {c.policy!r}")
    for name in ("block_size", "max_num_seqs", "max_num_batched_tokens"):
        v = getattr(c, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise bad(name, f"must be a positive integer, got {v!r}")
    if c.num_blocks is not None and (not isinstance(c.num_blocks, int) or c.num_blocks < 2):
        raise bad("num_blocks", f"must be >= 2 (block 0 is the null block), got {c.num_blocks!r}")
    if c.max_model_len is not None and c.max_model_len < 2:
        raise bad("max_model_len", f"must be >= 2, got {c.max_model_len!r}")
    if c.long_prefill_token_threshold < 0:
        raise bad("long_prefill_token_threshold", "must be >= 0")
    if not 0.0 <= c.watermark < 1.0:
        raise bad("watermark", f"must be in [0, 1), got {c.watermark}")
    if not 0.0 <= c.warmup < 1.0:
        raise bad("warmup", f"must be in [0, 1), got {c.warmup}")
    if c.hash_algo not in ("sha256", "sha256_cbor", "xxhash", "xxhash_cbor"):
        raise bad("hash_algo", f"unknown hash {c.hash_algo!r}")
    for name in ("step_overhead_ms", "prefill_ms_per_token", "decode_ms_per_seq"):
        if getattr(c, name) < 0:
            raise bad(name, "must be >= 0")
