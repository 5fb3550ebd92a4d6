"""The CPU tier's settings as a replay holds them (`kvcore.engine.options`): which options are
the tier's (echoed only when it is on, warned about when given without it), the dtype its bytes
are counted in, and whether step counts or the bandwidth time its transfers."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError

GEOMETRY = ("num_layers", "num_kv_heads", "head_size", "kv_dtype")
# a replay's settings of the tier (`ReplayOptions`' fields), echoed only when it is on
OFFLOAD_FIELDS = ("kv_offloading_size", "kv_offloading_size_chunks", "offload_block_size",
                  "eviction_policy", "offload_prompt_only", "store_threshold",
                  "sync_load_budget_bytes", "load_steps", "store_steps",
                  "offload_bandwidth_gbps", *GEOMETRY)


def tier_kv_dtype(opts: Any) -> str:
    """The dtype of the geometry options' KV cache (no model): `kv_dtype`, or what
    `kv_cache_dtype` stores (`--kv-cache-dtype fp8` halves a chunk, as in vLLM; it was ignored
    for the tier); the two at odds are refused (`kv_dtype` set, by a flag or a config line: a
    value other than its default)."""
    from kvcore.clock.kv_dtypes import KV_CACHE_DTYPES
    from kvcore.engine.options import KNOBS

    stored = KV_CACHE_DTYPES.get(opts.kv_cache_dtype)
    if stored is None:
        return opts.kv_dtype
    default = next(f.default for f in KNOBS if f.name == "kv_dtype")
    if ("kv_dtype" in (opts.given or ()) or opts.kv_dtype != default) and \
            opts.kv_dtype != stored:
        raise InputError(f"is {opts.kv_dtype} but kv_cache_dtype {opts.kv_cache_dtype} stores "
                         f"the KV cache as {stored}: give one of them", field="kv_dtype")
    return stored


def tier_settings(opts: Any, d: dict) -> None:
    """The tier's geometry in a replay's echoed settings (`ReplayOptions.to_dict`, in place): a
    model's sized it, so the geometry options' defaults go (they were echoed, unused); else the
    dtype the tier counts bytes in."""
    if opts.model or opts.model_config:
        for k in GEOMETRY:
            del d[k]
    else:
        d["kv_dtype"] = tier_kv_dtype(opts)


def unused_tier_options(opts: Any, config_line: Any = ()) -> list[str]:
    """The tier's options given (flags, or the trace's `config_line` keys) without a tier, for
    the warning (they were dropped from the config without a word): none with a tier."""
    sizes = {"kv_offloading_size", "kv_offloading_size_chunks"}
    if opts.offloading:
        return []
    return sorted(((opts.given or frozenset()) | set(config_line))
                  & (set(OFFLOAD_FIELDS) - sizes))


def steps_time_transfers(opts: Any) -> bool:
    """Whether a transfer takes `load_steps` / `store_steps` steps (arrivals=step, or the step
    counts given as options), not its bytes over the bandwidth. A trace's config line carries
    the oracle's step counts for `--arrivals step`: on the clock the bandwidth times the
    transfers, and the replay says so (`kvcore.engine.start_warnings`)."""
    given = opts.given or frozenset()
    return opts.arrivals == "step" or "load_steps" in given or "store_steps" in given
