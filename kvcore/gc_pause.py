"""`gc_paused()`: the cyclic garbage collector off while a replay runs.

Why: a replay allocates millions of short-lived containers (token lists, block lists, hash
lists, event records) and almost no reference cycles: a request, its block lists and its
records are freed by reference counting when it finishes. The collector still runs a young
collection every 700 container allocations and walks every young list item by item (a prompt
list of 30,000 token ids included) and now and then the whole heap. Measured on the first
3,000 Mooncake conversation requests with events (compiled build): 8.45 -> 7.56 s CPU; on
`benchmarks/sched_vs_vllm.py --requests 2000`: about 0.1 s of a 1.1 s process.

What is given up: cycles made during the replay wait for the collector until it is back on.
The replay's own objects form cycles only in the long-lived state (the block pool's free queue
links its blocks both ways; the context, its tracer and its pool refer to each other), which is
freed at the end either way; `tests/test_gc_pause.py` checks that a replay leaves no cyclic
garbage that grows with its length.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block; restore the previous state after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
