"""The options' own ranges, checked before anything is sized from them: the counts that must be
positive integers (one wording for every command: `kvcli config` said "must be positive" where
`kvcli replay` said "must be a positive integer"), and the memory figures (finite, at most
1 PiB; the utilization a fraction), and the integers with another floor (`check_int_at_least`:
max_model_len's 2, which `kvcli config`'s replay options and the sizing API share).
"""

from __future__ import annotations

import math
from typing import Any

from kvcore.errors import InputError, clipped, shown_value
from kvcore.host_memory import MAX_GIB

# (the API's resolve_kv_cache_config said "must be positive" and took 1, where every command
# refused it before reaching it)
MIN_MAX_MODEL_LEN = 2


def check_positive_int(v: Any, field: str) -> None:
    """``v`` must be an integer >= 1 (not a bool): every command's words for a count."""
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise InputError(f"must be a positive integer, got {shown_value(v)}", field=field)


def check_int_at_least(v: Any, lo: int, field: str, head: str | None = None) -> None:
    """``v`` must be an integer (not a bool, not 4.0) >= ``lo``; ``head`` words the floor."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (
            isinstance(v, float) and math.isfinite(v) and v >= lo):
        # a config line's 1e18 or 4.0, "2" or true: 'must be >= 2, got 1e+18' or
        # 'must be >= 0, got '2'' named the wrong rule
        raise InputError(f"must be an integer, got {clipped(v)}", field=field)
    if not isinstance(v, int) or not v >= lo:   # (a float below the floor, and NaN)
        raise InputError(f"{head or f'must be >= {lo:g}'}, got {v!r}", field=field)


def check_counts(**counts: int) -> None:
    """Each count (by its field's name, in the order given) must be a positive integer."""
    for fname, v in counts.items():
        check_positive_int(v, fname)


def check_memory_options(gpu_memory_gib: float | None, weights_gib: float | None,
                         activation_gib: float, gpu_memory_utilization: float) -> None:
    """The GPU's memory must be > 0, the weights' and activations' >= 0 (None: not given)."""
    for fname, x, lo_open in (("gpu_memory_gib", gpu_memory_gib, True),
                              ("weights_gib", weights_gib, False),
                              ("activation_gib", activation_gib, False)):
        if x is not None and (not math.isfinite(x) or x < 0 or (lo_open and x == 0)):
            raise InputError(f"must be a finite number {'>' if lo_open else '>='} 0, got {x}",
                             field=fname)
        if x is not None and x > MAX_GIB:
            raise InputError(f"must be at most {MAX_GIB:,.0f} GiB (1 PiB), got {x:g}",
                             field=fname)
    if not 0 < gpu_memory_utilization <= 1:
        raise InputError(f"must be in (0, 1], got {gpu_memory_utilization}",
                         field="gpu_memory_utilization")
