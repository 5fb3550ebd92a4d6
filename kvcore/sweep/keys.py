"""The options a sweep's job may set, their types, and how a value is made one of them.

A replay option is a `ReplayOptions` field, spelled as the replay's JSON `config` spells it
(`num_blocks`, `eviction_policy`); a cluster run adds `CLUSTER_KEYS`. Values come typed from a
spec file (TOML, JSON) or as text from `--set KEY=V1,V2` (`from_text`); both end as the field's
type (an integer for a float field becomes a float, so `4` and `4.0` are the same job). The
rules beyond the type (ranges, choices) are `ReplayOptions`' own, applied in `grid.py`.
"""

from __future__ import annotations

import math
from typing import Any

from kvcore.engine.options import KNOBS
from kvcore.vllm_values import kv_cache_dtype_name

COMMANDS = ("replay", "cluster")
# options naming a file a job reads, as it reads its trace: relative to the spec's folder
# (`spec.py`), and counted in the job's id by their bytes, not their path (`grid.job_id`)
FILE_KEYS = ("model_config", "calibration")

# name -> (kind, may be None): kind is "int", "float", "str", "bool" or "any" (groups)
_KINDS = {"int": "int", "float": "float", "str": "str", "bool": "bool"}


def _kind(annotation: str) -> tuple[str, bool]:
    parts = [p.strip() for p in str(annotation).split("|")]
    optional = "None" in parts
    base = [p for p in parts if p != "None"]
    return (_KINDS.get(base[0], "any") if len(base) == 1 else "any"), optional


REPLAY_KEYS: dict[str, tuple[str, bool]] = {f.name: _kind(str(f.type)) for f in KNOBS}
# prefix_cache_retention_interval: an integer or "dense" (None)
REPLAY_KEYS["prefix_cache_retention_interval"] = ("int", True)
# `kvcli cluster`'s own options (`ClusterOptions`); `router` is one router a job
CLUSTER_KEYS: dict[str, tuple[str, bool]] = {
    "replicas": ("int", False), "router": ("str", False), "router_opt": ("strs", False),
    "seed": ("int", False), "metrics_interval_ms": ("float", False),
    "kv_event_lag_ms": ("float", False)}
CLUSTER_DEFAULTS = {"replicas": 2, "router": "round_robin", "router_opt": [], "seed": 0,
                    "metrics_interval_ms": 50.0, "kv_event_lag_ms": 0.0}
_NONE = ("none", "null")
_DENSE = ("dense",)
_TRUE = ("true", "on", "yes", "1")
_FALSE = ("false", "off", "no", "0")


class BadValue(ValueError):
    """A value that is not of its option's type (the caller adds the key and the line)."""


def keys_for(command: str) -> dict[str, tuple[str, bool]]:
    return REPLAY_KEYS if command == "replay" else {**REPLAY_KEYS, **CLUSTER_KEYS}


def unknown_key_message(key: str, command: str) -> str:
    if command == "replay" and key in CLUSTER_KEYS:
        return (f"unknown option {key!r} (a cluster option: command = \"cluster\" in a spec, "
                "--command cluster with --set)")
    close = [k for k in keys_for(command) if key in k or k in key]
    hint = f" (did you mean {', '.join(sorted(close)[:3])}?)" if close else ""
    return f"unknown option {key!r}{hint}; options are the replay's JSON config keys" \
        " (docs/sweep.md)"


def coerce(key: str, value: Any, command: str) -> Any:
    """`value` (from a spec file) as option `key`'s type; `BadValue` if it is not one."""
    kind, optional = keys_for(command)[key]
    if value is None or (isinstance(value, str) and value.lower() in _NONE):
        if optional:
            return None
        raise BadValue(f"may not be none, got {value!r}")
    if key == "prefix_cache_retention_interval" and isinstance(value, str) \
            and value.lower() in _DENSE:
        return None
    if kind == "bool":
        if isinstance(value, bool):
            return value
        raise BadValue(f"must be true or false, got {value!r}")
    if kind == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise BadValue(f"must be an integer, got {value!r}")
    if kind == "float":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise BadValue(f"must be a finite number, got {value!r}")
            return float(value)
        raise BadValue(f"must be a number, got {value!r}")
    if kind == "str":
        if isinstance(value, str):
            return kv_cache_dtype_name(value) if key == "kv_cache_dtype" else value
        raise BadValue(f"must be a string, got {value!r}")
    if kind == "strs":
        if isinstance(value, str):
            return [value]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return list(value)
        raise BadValue(f"must be a string or a list of strings, got {value!r}")
    return value        # groups: checked by ReplayOptions' rule


def from_text(key: str, text: str, command: str) -> Any:
    """One `--set KEY=...` value (text) as option `key`'s type; `BadValue` if it is not one."""
    kind, optional = keys_for(command)[key]
    t = text.strip()
    if optional and t.lower() in _NONE:
        return None
    if key == "prefix_cache_retention_interval" and t.lower() in _DENSE:
        return None
    try:
        if kind == "int":
            return int(t)
        if kind == "float":
            return coerce(key, float(t), command)
    except ValueError:
        word = "an integer" if kind == "int" else "a number"
        raise BadValue(f"must be {word}, got {t!r}") from None
    if kind == "bool":
        if t.lower() in _TRUE:
            return True
        if t.lower() in _FALSE:
            return False
        raise BadValue(f"must be true or false, got {t!r}")
    if kind == "any":
        raise BadValue("takes a structured value: set it in a spec file")
    if key == "kv_cache_dtype":         # bf16 and bfloat16: one job
        return kv_cache_dtype_name(t)
    return [t] if kind == "strs" else t
