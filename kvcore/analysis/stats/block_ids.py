"""Whether a block event is the plain case the vectorized handlers take (`block_events.py`,
`key_events.py`): its block lists hold distinct block ids. The checks run in C (a set of the
types, min and max); whatever fails them goes to the per-block reference (`per_block.py`),
which reports it or handles it one block at a time.
"""

from __future__ import annotations

from operator import itemgetter

import numpy as np

from kvcore.analysis.stats.entry_checks import ints_ok

# Whether ``blocks`` is a list of block ids (ints in 0..n-1): the entry checks' test, which runs
# in C (a list index would also take a bool or a negative int; the per-block path reports what
# is not). Bound, not wrapped: it runs for every block event.
ids_ok = ints_ok


def held(bhash: list, blocks: list) -> tuple:
    """The hash each block holds; raises for what is not a block id."""
    if not ids_ok(blocks, len(bhash)):
        raise IndexError("not block ids")
    if len(blocks) > 1:
        return itemgetter(*blocks)(bhash)
    return (bhash[blocks[0]],) if blocks else ()


def index(bhash: list, blocks) -> tuple[tuple, np.ndarray] | None:
    """(the hash each block holds, the blocks as an index array), or None when the blocks are
    not distinct valid indices (then the per-block path runs and raises what it raises)."""
    try:
        got = held(bhash, blocks)
        n = len(blocks)
        if len(set(blocks)) != n:
            return None
        return got, np.fromiter(blocks, dtype=np.intp, count=n)
    except Exception:       # noqa: BLE001 - whatever it is, the per-block path reports it
        return None
