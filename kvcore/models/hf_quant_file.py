"""ModelOpt 0.29 and older write their quantization settings to ``hf_quant_config.json`` beside
config.json, not into it. vLLM 0.33 takes that file as the ``quantization_config`` of a config
that has none (transformers_utils/config.py), so a checkpoint folder's config.json alone would
size its weights unquantised without a word: the file is read here, as vLLM reads it. A
MIXED_PRECISION config whose ``quantized_layers`` table is not at its top level is built from
the file alone (weight_utils.py get_quant_config), and refused without one
(`kvcore.models.modelopt_quant`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kvcore.models.hf_config import load_hf_config
from kvcore.models.modelopt_quant import FROM_FILE

NAME = "hf_quant_config.json"


def with_quant_file(cfg: dict[str, Any], path: str) -> dict[str, Any]:
    """`cfg` (read from `path`) with the ``hf_quant_config.json`` beside it as its
    ``quantization_config`` when it has none, or when it is a mixed-precision config without
    its table; `cfg` itself otherwise (and for stdin)."""
    quant = cfg.get("quantization_config")
    mixed = isinstance(quant, dict) and "quantized_layers" not in quant and isinstance(
        inner := quant.get("quantization", quant), dict) and str(
        inner.get("quant_algo", "")).upper() == "MIXED_PRECISION"
    if (quant is not None and not mixed) or path == "-":
        return cfg
    beside = Path(path).parent / NAME
    if not beside.is_file():
        return cfg
    found = load_hf_config(beside)
    if isinstance(quant, dict):
        # (mixed: the method and the KV cache dtype stay config.json's; the table is the file's)
        return {**cfg, "quantization_config": {**quant, FROM_FILE: found}}
    return {**cfg, "quantization_config": {**found, FROM_FILE: found}}
