"""Comma-separated numbers given to one option (`--capacities 6,64,640`), parsed for `kvcli curve`."""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

from kvcore.errors import InputError, clipped


def parse_numbers(text: str | None, field: str, kind=int) -> list | None:
    """``"6,64,640"`` -> [6, 64, 640]; a clear `InputError` naming the option otherwise."""
    if text is None:
        return None
    out = []
    for part in text.split(","):
        part = part.strip().replace("_", "")
        try:
            v = float(part)
            if not math.isfinite(v):     # nan, inf, and 1e400 (which float() reads as inf)
                raise InputError(f"not a finite number: {clipped(part)}", field=field)
            if kind is int:
                # read exactly (as a float, 100.0000000000000001 was 100 and 2^53 + 1 was 2^53)
                d = Decimal(part)
                if d != d.to_integral_value():
                    raise ValueError
                v = int(d)      # (below 2^1024: float() read it as finite)
        except (ValueError, InvalidOperation):
            raise InputError(f"not a {'whole ' if kind is int else ''}number: {clipped(part)}",
                             field=field) from None
        out.append(v)
    return out
