"""The choices a refusal names: all of them when they are few, else the closest to what was given
and where to see them all, so that the refusal stays one short line (the 13 model presets made
a 327-character line; vLLM's 30 quantization methods a longer one)."""

from __future__ import annotations

from collections.abc import Sequence
from difflib import get_close_matches

# the most choices a refusal lists whole
FEW = 8


def named_choices(given: object, choices: Sequence[str], noun: str, see: str,
                  close: Sequence[str] | None = None) -> str:
    """``"{noun}: a, b, c"`` for `FEW` choices or fewer; else ``"closest {noun}: x, y; see
    {see} for all N"``, or ``"see {see} for the N {noun}"`` when none is close. ``close``: the
    near misses when the caller has said them already (then none are named again); by default
    difflib's three best at 0.6 (what was given, lower-cased; none for a value not a string)."""
    if len(choices) <= FEW:
        return f"{noun}: {', '.join(choices)}"
    if close is None:
        close = (get_close_matches(given.strip().lower(), choices, n=3, cutoff=0.6)
                 if isinstance(given, str) else [])
    if close:
        return f"closest {noun}: {', '.join(close)}; see {see} for all {len(choices)}"
    return f"see {see} for the {len(choices)} {noun}"
