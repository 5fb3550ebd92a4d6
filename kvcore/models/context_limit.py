"""The longest `max_model_len` vLLM 0.33 accepts for a model without VLLM_ALLOW_LONG_MAX_MODEL_LEN
(`config/model.py`, `_get_and_verify_max_len`): `max_position_embeddings` times the RoPE scaling
factor (not for YaRN, LongRoPE, su, Llama 3 or DeepSeek's scalings, which leave it already
scaled, nor for Gemma 3, whose length is scaled already), or the config's `model_max_length` when
that is larger; and the one it runs at when none is given (`default_len`): the scaled length,
or a LongRoPE model's `original_max_position_embeddings`. The length before scaling is vLLM's too
(`derive_max_model_len_and_key`): the smallest of the length keys a config has, unless it has a
`model_max_length` (Command-R: 8,192 positions, 131,072 by default). Legacy RoPE names are read
as vLLM patches them (`su` is LongRoPE, `telechat3-yarn` YaRN, `mrope` the default). (vLLM caps
the length at a tokenizer_config.json's model_max_length only for pooling models with absolute
position embeddings, which kvcli does not model.)"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from kvcore.errors import InputError, clipped

if TYPE_CHECKING:       # (geometry's reading imports this module)
    from kvcore.models.geometry import ModelGeometry

# RoPE types whose max_position_embeddings is already the scaled length (vLLM's list)
UNSCALED = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")
# legacy rope_type names vLLM's `patch_rope_parameters` renames on loading a config
LEGACY = {"su": "longrope", "telechat3-yarn": "yarn", "mrope": "default"}
# the config keys vLLM reads a model's length from (the smallest wins), in its order
LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
               "model_max_length", "max_target_positions", "max_sequence_length",
               "max_seq_length", "seq_len")


def lengths(cfg: dict[str, Any], max_position_embeddings: int, source: str) -> tuple[int, int]:
    """(`context_limit`, `default_len`); an `InputError` naming ``source`` for a RoPE factor no
    length comes from."""
    try:
        _check_rope(cfg)
        return (context_limit(cfg, max_position_embeddings),
                default_len(cfg, max_position_embeddings))
    except BadLength as err:
        raise InputError(str(err), path=source or None, field=err.field) from None


class BadLength(ValueError):
    """No length vLLM can run at comes from the config; `field` is the key to blame."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def context_limit(cfg: dict[str, Any], max_position_embeddings: int) -> int:
    limit = _scaled(cfg, max_position_embeddings)
    longest = _length(cfg.get("model_max_length"))
    return max(limit, int(longest)) if longest else limit


def derived_length(cfg: dict[str, Any], max_position_embeddings: int) -> tuple[float, str]:
    """The model's length before RoPE scaling, as vLLM derives it, and the key it came from
    (a float length is taken, as vLLM takes it: `int()` of the scaled length)."""
    override = _length(cfg.get("model_max_length"))
    if override:
        return override, "model_max_length"
    found = [(n, k) for n, k in ((_length(cfg.get(k)), k) for k in LENGTH_KEYS[1:]) if n]
    return min([(max_position_embeddings, LENGTH_KEYS[0]), *found], key=lambda nk: nk[0])


def _length(value: Any) -> float:
    """A positive length key's value (an int or a float), else 0 (absent, null, a bool, text,
    NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return max(0, value)


def default_len(cfg: dict[str, Any], max_position_embeddings: int) -> int:
    """vLLM's max_model_len when none is given: the RoPE-scaled length (a linear factor of 4 on
    16,384 positions: 65,536), or, for LongRoPE, `original_max_position_embeddings` ("to
    avoid performance degradation for shorter sequences": Phi-3-128k runs at 4,096)."""
    raw = cfg.get("original_max_position_embeddings")
    original = _length(raw)
    longrope = any(_kind(rp) == "longrope" for rp in _rope_parameters(cfg))
    if longrope and raw is not None and (isinstance(raw, bool) or not isinstance(raw, int)
                                         or not 1 <= raw < 2 ** 63):
        # (the short cache's length: "x" and -1 were read as none, the model run and its cache
        # sized at max_position_embeddings; 4096.5 as 4096)
        raise BadLength(f"original_max_position_embeddings {clipped(raw)}: not a length vLLM "
                        "can run at", "original_max_position_embeddings")
    if original and longrope:
        return int(original)
    return _scaled(cfg, max_position_embeddings)


def _scaled(cfg: dict[str, Any], max_position_embeddings: int) -> int:
    """`BadLength` for a length or a factor no length can come from (0, negative, inf, past
    2**63)."""
    factor = 1.0
    if "gemma3" not in str(cfg.get("model_type", "")):
        for rp in _rope_parameters(cfg):
            if _kind(rp) not in UNSCALED and isinstance(rp.get("factor"), (int, float)) \
                    and not isinstance(rp.get("factor"), bool):
                factor = float(rp["factor"])
    length, key = derived_length(cfg, max_position_embeddings)
    scaled = length * factor
    if not 1 <= length < 2 ** 63:
        raise BadLength(f"{key} {length!r}: not a length vLLM can run at", key)
    if not 1 <= scaled < 2 ** 63:
        raise BadLength(f"a RoPE scaling factor of {factor!r} makes the model's length "
                        f"{scaled!r}: it must be a positive number",
                        "rope_parameters" if cfg.get("rope_parameters") else "rope_scaling")
    return int(scaled)


def _check_rope(cfg: dict[str, Any]) -> None:
    """`BadLength` for RoPE parameters of the wrong type, which kvcli read as none (a string
    ``rope_scaling`` or ``factor``: the length and the cos/sin cache unscaled; a string
    ``mrope_section``: MRoPE) and vLLM fails on (``rope_scaling["rope_type"]`` of a string,
    MRoPE's sum of the sections)."""
    for key in ("rope_parameters", "rope_scaling"):
        if cfg.get(key) is not None and not isinstance(cfg[key], dict):
            raise BadLength(f"expected an object of RoPE parameters, got {clipped(cfg[key])}",
                            key)
    key = "rope_parameters" if cfg.get("rope_parameters") else "rope_scaling"
    for rp in _rope_parameters(cfg):
        factor, section = rp.get("factor"), rp.get("mrope_section")
        if factor is not None and (isinstance(factor, bool)
                                   or not isinstance(factor, (int, float))):
            raise BadLength(f"expected a number for its factor, got {clipped(factor)}", key)
        if section is not None and (not isinstance(section, list) or not all(
                isinstance(s, int) and not isinstance(s, bool) for s in section)):
            raise BadLength(f"expected a list of integers for its mrope_section, got "
                            f"{clipped(section)}", key)
        if _kind(rp) == "longrope":
            _check_longrope(rp, key)


def _check_longrope(rp: dict[str, Any], key: str) -> None:
    """LongRoPE's rescale factors, which vLLM's get_rope indexes and makes a float tensor of
    (a KeyError without one, a TypeError on text; kvcli sized the cache whatever they held)."""
    for name in ("short_factor", "long_factor"):
        given = rp.get(name)
        if not isinstance(given, list) or not given or not all(
                isinstance(f, (int, float)) and not isinstance(f, bool) and math.isfinite(f)
                for f in given):
            raise BadLength(f"expected a list of numbers for its {name}, got {clipped(given)}",
                            key)


def _kind(rp: dict[str, Any]) -> str:
    kind = str(rp.get("rope_type", rp.get("type", "default")))
    return LEGACY.get(kind, kind)


def _rope_parameters(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """The config's RoPE parameter sets: `rope_scaling` or `rope_parameters`, one dict or one
    per layer type."""
    rp = cfg.get("rope_parameters") or cfg.get("rope_scaling")
    if not isinstance(rp, dict):
        return []
    if rp and all(isinstance(v, dict) for v in rp.values()):
        return list(rp.values())
    return [rp]


def long_context_note(g: ModelGeometry, max_model_len: int | None) -> str | None:
    """vLLM refuses a max_model_len above the model's own (`_get_and_verify_max_len`) unless
    VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 is set; kvcli sizes it either way, and says so."""
    limit = g.context_limit or g.max_position_embeddings
    if max_model_len is None or max_model_len <= limit:
        return None
    return (f"max_model_len {max_model_len:,} is above {g.name}'s {limit:,} "
            "(max_position_embeddings, RoPE-scaled): vLLM 0.33 refuses it unless "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (positions past it give NaNs under RoPE)")
