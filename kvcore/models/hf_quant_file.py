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

from kvcore.errors import InputError
from kvcore.models.hf_config import load_hf_config
from kvcore.models.modelopt_quant import FROM_FILE

NAME = "hf_quant_config.json"


def with_quant_file(cfg: dict[str, Any], path: str) -> dict[str, Any]:
    """`cfg` (read from `path`) with the ``hf_quant_config.json`` beside it as its
    ``quantization_config`` when it has none, or when it is a mixed-precision config without
    its table; `cfg` itself otherwise (and for stdin)."""
    quant = cfg.get("quantization_config")
    beside = _beside(cfg, path)
    if beside is None:
        return cfg
    found = load_hf_config(beside)
    if isinstance(quant, dict):
        # (mixed: the method and the KV cache dtype stay config.json's; the table is the file's)
        return {**cfg, "quantization_config": {**quant, FROM_FILE: found}}
    return {**cfg, "quantization_config": {**found, FROM_FILE: found}}


def _mixed(quant: Any) -> bool:
    return isinstance(quant, dict) and "quantized_layers" not in quant and isinstance(
        inner := quant.get("quantization", quant), dict) and str(
        inner.get("quant_algo", "")).upper() == "MIXED_PRECISION"


def _beside(cfg: dict[str, Any], path: str) -> Path | None:
    """The hf_quant_config.json vLLM reads for `cfg` (None: none, or not read)."""
    quant = cfg.get("quantization_config")
    if (quant is not None and not _mixed(quant)) or path == "-":
        return None
    beside = Path(path).parent / NAME
    return beside if beside.is_file() else None


def in_quant_file(err: InputError, cfg: dict[str, Any], path: str) -> InputError:
    """`err`, raised reading `cfg` (config.json at `path`) with the file beside it, naming the
    file and its own key where the bad field is the file's: any of the quantization_config it
    gave, a mixed-precision table taken from it; `err` itself otherwise."""
    field, prefix = err.field or "", "quantization_config"
    beside = _beside(cfg, path) if field.startswith(prefix) else None
    if beside is None or str(err.path) != path or (
            cfg.get("quantization_config") is not None and "quantized_layers" not in field):
        return err
    own = field[len(prefix) + 1:]
    if cfg.get("quantization_config") is not None:
        # (a mixed table: the file's, at its top or under "quantization" as the file has it)
        found = load_hf_config(beside)
        own = ("quantization." if isinstance(found.get("quantization"), dict)
               and "quantized_layers" in found["quantization"] else "") + "quantized_layers"
    return InputError(err.message, path=str(beside), line=err.line, field=own or None,
                      remedy=err.remedy)
