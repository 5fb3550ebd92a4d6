"""vLLM 0.33's value names for the settings kvcli shares with `vllm serve`: which kvcli models,
which it reads under an older kvcli spelling, and which it refuses, saying why.

vLLM's lists are its `Literal`s (vllm/config/cache.py `CacheDType`, `KVOffloadingBackend`;
vllm/config/model.py `ModelDType`), copied as names. A value vLLM accepts that kvcli cannot
model is refused in one line that says so, never read as something else.
"""

from __future__ import annotations

from kvcore.errors import InputError, clipped

# vLLM 0.33's CacheDType, in its order (--kv-cache-dtype)
VLLM_KV_CACHE_DTYPES = (
    "auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla",
    "nvfp4_ds_mla", "turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc",
    "turboquant_3bit_nc", "octave_k3v4", "octave_k3v3", "octave_k3v3_compact",
    "ultraquant_4bit", "int4_per_token_head", "int8_per_token_head", "fp8_per_token_head",
    "nvfp4", "nvfp4_4over6")
# the ones kvcli sizes and times: a plain element of 2 or 1 bytes, no scales in the page, and
# sparse MLA's fp8_ds_mla (656 bytes a token; refused beside other models as vLLM refuses it)
KV_CACHE_DTYPES = ("auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla")
# kvcli's older spellings (`kvcli config` listed fp16|bf16|fp32): still read, not listed
KV_CACHE_DTYPE_ALIASES = {"fp16": "float16", "half": "float16", "bf16": "bfloat16"}

# vLLM 0.33's ModelDType (--dtype); kvcli reads each, "auto" as the model's own
VLLM_MODEL_DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")

# vLLM 0.33's KVOffloadingBackend (--kv-offloading-backend) is native or lmcache; kvcli models
# the native tier
KV_OFFLOADING_BACKENDS = ("native",)

# vLLM's names (its EngineArgs fields) of settings kvcli names otherwise: a sweep's keys (spec
# file, --set) read them as kvcli's, as the command line reads vLLM's flags
VLLM_KEYS = {"num_gpu_blocks_override": "num_blocks", "prefix_caching_hash_algo": "hash_algo",
             "scheduling_policy": "policy", "tensor_parallel_size": "tp"}


def kv_cache_dtype(name: str, field: str = "kv_cache_dtype") -> str:
    """The KV cache dtype `name` as kvcli models it (vLLM's name); an InputError, saying why,
    for a vLLM dtype kvcli does not model. Another name is returned as given (lowercase), for
    the caller's own table to accept (`kvcli config`'s fp32) or refuse."""
    v = name.strip().lower()
    v = KV_CACHE_DTYPE_ALIASES.get(v, v)
    if v in VLLM_KV_CACHE_DTYPES and v not in KV_CACHE_DTYPES:
        raise InputError(f"{name!r} is a vLLM 0.33 KV cache dtype kvcli does not model (its "
                         "pages hold scales or packed sub-byte values); kvcli models "
                         f"{', '.join(KV_CACHE_DTYPES)}", field=field)
    return v


def kv_cache_dtype_name(value: object) -> object:
    """`value` under vLLM's name when it is one of kvcli's older spellings (bf16 -> bfloat16),
    else as given: what a sweep key or a trace's config line holds reads as the command line
    does (the rule that refuses a value stays the caller's, which knows the line)."""
    if isinstance(value, str):
        return KV_CACHE_DTYPE_ALIASES.get(value.strip().lower(), value)
    return value


def kv_offloading_backend(name: str, field: str = "kv_offloading_backend") -> str:
    """vLLM's --kv-offloading-backend: 'native' (the tier kvcli models); 'lmcache' refused."""
    v = name.strip().lower()
    if v == "lmcache":
        raise InputError("'lmcache' is a vLLM 0.33 backend kvcli does not model (LMCache's "
                         "store is its own project); kvcli models vLLM's native CPU tier "
                         "(native)", field=field)
    if v not in KV_OFFLOADING_BACKENDS:
        raise InputError(f"must be native or lmcache (vLLM's), got {clipped(name)}", field=field)
    return v


def retention_interval(text: str) -> int | None:
    """--prefix-cache-retention-interval: 'dense' (None, every full block) or an integer."""
    if text.strip().lower() in ("dense", "null", "none"):
        return None
    try:
        return int(text)
    except ValueError:
        raise InputError(f"must be 'dense' or an integer >= 0, got {clipped(text)}",
                         field="prefix_cache_retention_interval") from None
