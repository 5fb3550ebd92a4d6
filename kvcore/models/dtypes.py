"""The model dtypes a config.json or ``--dtype`` names, as vLLM reads them: its aliases, what
``--dtype auto`` runs a checkpoint at, and the 16-bit KV caches vLLM takes beside them."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped

DTYPE_ALIASES = {"float16": "float16", "fp16": "float16", "half": "float16",
                 "bfloat16": "bfloat16", "bf16": "bfloat16", "float32": "float32",
                 "fp32": "float32", "float": "float32"}


def config_dtype(torch_dtype: Any, dtype: Any, source: str) -> str:
    """`model_dtype` of a config's ``dtype`` (or, where it is absent or empty,
    ``torch_dtype``: transformers 5 keeps ``torch_dtype`` only for a config without ``dtype``,
    PretrainedConfig.__init__), each a name (`dtype_names`)."""
    dtype_names({"torch_dtype": torch_dtype, "dtype": dtype}, source)
    return model_dtype(dtype or torch_dtype, source)


def named_dtype(cfg: Any) -> Any:
    """The dtype a config dict names (``dtype``, else ``torch_dtype``; None: neither)."""
    if not isinstance(cfg, dict):
        return None
    return cfg.get("dtype") or cfg.get("torch_dtype") or None


def wrapper_dtype(cfg: dict[str, Any], text: dict[str, Any]) -> Any:
    """The dtype vLLM runs a multimodal wrapper at (ModelArchConfigConvertorBase.
    get_torch_dtype): the wrapper's own, else its text config's, else its vision config's,
    else its encoder config's (None: none names one; vLLM would read the checkpoint's
    safetensors, kvcli takes bfloat16)."""
    towers = (named_dtype(cfg.get(k)) for k in ("vision_config", "encoder_config"))
    return next((d for d in (named_dtype(cfg), named_dtype(text),
                             *(t for t in towers if isinstance(t, str))) if d), None)


def dtype_names(cfg: dict[str, Any], source: str) -> None:
    """Refuses a ``torch_dtype`` or ``dtype`` of `cfg` that is no name: an empty object or
    list was read as absent (a wrapper's, as its text_config's), the model sized at bfloat16
    without a word."""
    for key in ("torch_dtype", "dtype"):
        raw = cfg.get(key)
        if raw is not None and not isinstance(raw, str):
            raise InputError(f"expected a dtype name such as \"bfloat16\", got {clipped(raw)}",
                             path=source or None, field=key)


def model_dtype(raw: Any, source: str) -> str:
    """The dtype vLLM's --dtype auto runs a config at (``raw``: its torch_dtype or dtype)."""
    raw_dtype = str(raw or "bfloat16")
    dtype = DTYPE_ALIASES.get(raw_dtype)
    if dtype is None:
        raise InputError(f"unsupported dtype {raw_dtype!r}", path=source or None,
                         field="torch_dtype")
    # vLLM's --dtype auto downcasts a float32 checkpoint (Gemma 2's) to the platform's
    # preferred dtype, bfloat16 on the GPUs it serves (_resolve_auto_dtype); --dtype
    # float32 still asks for float32
    return "bfloat16" if dtype == "float32" else dtype


def check_float_kv_cache(kv_cache_dtype: str, model_dtype: str) -> None:
    """vLLM 0.33 refuses a float16 or bfloat16 KV cache other than the model's dtype, for every
    model, before any layer is built (`VllmConfig._reject_mismatched_float_kv_cache`)."""
    if kv_cache_dtype not in ("float16", "bfloat16") or kv_cache_dtype == model_dtype:
        return
    allowed = f"`auto` or `{model_dtype}`" if model_dtype in ("float16", "bfloat16") else "`auto`"
    raise InputError(f"vLLM 0.33 refuses it: 'kv_cache_dtype=\"{kv_cache_dtype}\" is "
                     f"incompatible with dtype=\"{model_dtype}\". Please set "
                     f"`--kv-cache-dtype` to {allowed}.'", field="kv_cache_dtype")
