"""The fields each trace format reads, and the first request's near misses of them.

Real traces carry fields kvcli does not read (Bailian's ``turn``, `kvcli gen`'s
``conversation``), so an unread field alone says nothing. A misspelt optional field does: a
``timestmap`` reads as no timestamp (every request at 0 ms) and the replay runs without a word.
So the first request's unread fields that are close to a read one (`difflib`'s ratio >= 0.8:
one letter swapped, dropped or doubled) are reported; the replay warns (`start_warnings`).
Only the first request is looked at: a trace's writer gives every line the same keys, and the
read loop stays as it was.
"""

from __future__ import annotations

from difflib import get_close_matches

_COMMON = ("id", "timestamp", "arrival_step", "priority", "output_length")
READ_FIELDS: dict[str, frozenset[str]] = {
    "mooncake": frozenset(_COMMON + ("input_length", "hash_ids", "block_size")),
    "bailian": frozenset(_COMMON + ("chat_id", "input_length", "hash_ids", "block_size")),
    "tokens": frozenset(_COMMON + ("prompt_token_ids", "output_token_ids", "cache_salt",
                                   "lora")),
    "lengths": frozenset(_COMMON + ("input_length",)),
}

_ANY_READ = frozenset().union(*READ_FIELDS.values())


def near_misses(obj: dict, fmt: str) -> list[tuple[str, str]]:
    """(field, the read field it is close to) for each of ``obj``'s fields that ``fmt`` does
    not read but nearly spells, in the line's order."""
    read = READ_FIELDS.get(fmt)
    if read is None:
        return []
    out = []
    for key in obj:
        # (a field another format reads is a field, not a misspelling: a token-id trace's
        # input_length is not 'output_length')
        if key in _ANY_READ or not isinstance(key, str):
            continue
        close = get_close_matches(key, read, n=1, cutoff=0.8)
        if close:
            out.append((key, close[0]))
    return out
