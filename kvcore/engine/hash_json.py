"""Block hashes as event JSON: the 64-bit ints our lines and vLLM's events carry.

`hash_ints` gives the ints, `hash_array` the same as a numpy array orjson writes without making
an int per hash, `hashes_json` the JSON text itself (in C on the compiled build), and
`stride_json` a hash-id prompt's sampled tokens (the `admit` lines' `first_tokens`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from kvcore.kv_events import hashes_to_ints

_dumps = orjson.dumps
_NUMPY = orjson.OPT_SERIALIZE_NUMPY     # `hash_array`'s arrays are written as JSON lists of ints
# `native_lines.hashes_json` / `.stride_json` once looked up (`_load_native`; None: not built),
# kept as functions: a module attribute read per line costs more than it is worth
_native_json: Any = False
_native_stride: Any = None
_frombuffer: Any = None     # numpy's, imported on first use: a replay without events never
                            # needs numpy (its import is ~0.09 s of every process's start)


def _last_words(hashes: list[bytes]) -> Any:
    """The last 8 bytes of each hash as a big-endian uint64 numpy view, in one pass, for long
    lists of equal-length hashes (one hash algorithm); None otherwise (numpy would not pay)."""
    n = len(hashes)
    if n >= 12:
        size = len(hashes[0])
        # every hash as long as the first (a total that merely adds up would misread them),
        # and at least one word long (an empty hash is the int 0, and a view of none fails)
        if size >= 8 and size % 8 == 0 and len(set(map(len, hashes))) == 1:
            global _frombuffer
            if _frombuffer is None:
                import numpy
                _frombuffer = numpy.frombuffer
            k = size // 8
            return _frombuffer(b"".join(hashes), dtype=">u8")[k - 1::k]
    return None


def hash_ints(hashes: list[bytes]) -> list[int]:
    """The 64-bit event form of block hashes (`kvcore.kv_events.hashes_to_ints`: this runs for
    every block of every event)."""
    words = _last_words(hashes)
    return hashes_to_ints(hashes) if words is None else words.tolist()


def hash_array(hashes: list[bytes]) -> Any:
    """`hash_ints` for a sink that writes JSON itself (`JsonlEvents.writes_arrays`): a long list
    comes back as a native uint64 numpy array, which orjson writes as the same digits without
    making a Python int per hash (4% of a conversation replay with events: 5.28 -> 5.08 s CPU
    on its first 3,000 requests, medians of 4 interleaved runs); a short one as a list."""
    words = _last_words(hashes)
    if words is None:
        return hashes_to_ints(hashes)
    return words.astype("u8")      # a contiguous copy in native order (orjson needs both)


def _load_native() -> None:
    global _native_json, _native_stride
    from kvcore import compiled
    mod = compiled.native("kvcore.engine.native_lines")
    _native_json = None if mod is None else mod.hashes_json
    _native_stride = None if mod is None else mod.stride_json


def hashes_json(hashes: list[bytes]) -> bytes:
    """The JSON text orjson writes for `hash_ints(hashes)`, in C on the compiled build
    (`native_lines.pyx`: for a line's typical few hashes 46 ns a hash where numpy and orjson
    took 371, 167 ns for one hash against 856; the same 24 ns for 750)."""
    if _native_json is False:
        _load_native()
    if _native_json is not None:
        return _native_json(hashes)
    return _dumps(hash_array(hashes), option=_NUMPY)


def stride_json(ids: Sequence[int], tb: int, end: int, step: int) -> bytes | None:
    """The JSON of ``[ids[p // tb] * tb + p % tb for p in range(0, end, step)]`` (a hash-id
    prompt's tokens every ``step`` positions: `admit` lines' `first_tokens`) in C on the
    compiled build; None without it, or for what the C path leaves to Python (an id past the
    list, a token outside int64)."""
    if _native_json is False:
        _load_native()
    if _native_stride is None:
        return None
    # (the C path reads a list: a trace's array("Q") of ids is one per request, ~24 ids)
    out: bytes | None = _native_stride(ids if type(ids) is list else list(ids), tb, end, step)
    return out
