"""ModelOpt 0.29 and older write their quantization settings to ``hf_quant_config.json`` beside
config.json, not into it. vLLM 0.33 takes that file as the ``quantization_config`` of a config
that has none (transformers_utils/config.py), so a checkpoint folder's config.json alone would
size its weights unquantised without a word: the file is read here, as vLLM reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kvcore.models.hf_config import load_hf_config

NAME = "hf_quant_config.json"


def with_quant_file(cfg: dict[str, Any], path: str) -> dict[str, Any]:
    """`cfg` (read from `path`) with the ``hf_quant_config.json`` beside it as its
    ``quantization_config`` when it has none; `cfg` itself otherwise (and for stdin)."""
    if cfg.get("quantization_config") is not None or path == "-":
        return cfg
    beside = Path(path).parent / NAME
    if not beside.is_file():
        return cfg
    return {**cfg, "quantization_config": load_hf_config(beside)}
