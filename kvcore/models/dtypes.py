"""The model dtypes a config.json or ``--dtype`` names, as vLLM reads them: its aliases, and
what ``--dtype auto`` runs a checkpoint at."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped

DTYPE_ALIASES = {"float16": "float16", "fp16": "float16", "half": "float16",
                 "bfloat16": "bfloat16", "bf16": "bfloat16", "float32": "float32",
                 "fp32": "float32", "float": "float32"}


def config_dtype(torch_dtype: Any, dtype: Any, source: str) -> str:
    """`model_dtype` of a config's ``torch_dtype`` (or, where it is absent or empty,
    ``dtype``), each a name (`dtype_names`)."""
    dtype_names({"torch_dtype": torch_dtype, "dtype": dtype}, source)
    return model_dtype(torch_dtype or dtype, source)


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
