"""The options' own ranges, checked before anything is sized from them: the counts that must be
positive integers (one wording for every command: `kvcli config` said "must be positive" where
`kvcli replay` said "must be a positive integer"), and the memory figures (finite, at most
1 PiB; the utilization a fraction).
"""

from __future__ import annotations

import math
from typing import Any

from kvcore.errors import InputError, shown_value
from kvcore.host_memory import MAX_GIB


def check_positive_int(v: Any, field: str) -> None:
    """``v`` must be an integer >= 1 (not a bool): every command's words for a count."""
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise InputError(f"must be a positive integer, got {shown_value(v)}", field=field)


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
