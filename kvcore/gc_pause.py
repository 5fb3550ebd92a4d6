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

_one_shot = False


def one_shot_process() -> None:
    """Declare this process one-shot: it ends after its command (`kvcli`'s entry point says so;
    tests calling the commands in-process do not), so `gc_paused(freeze=True)` may freeze."""
    global _one_shot
    _one_shot = True


@contextmanager
def gc_paused(*, freeze: bool = False) -> Iterator[None]:
    """Disable the cyclic collector for the block; restore the previous state after.

    ``freeze`` (in a one-shot process only): move every object the collector tracks to its
    permanent generation (`gc.freeze`) before turning it back on. The first collection after a
    pause walks everything allocated during it that is still there (the trace's token lists,
    the replay's cyclic state: the pool, the context), and the one at exit walks what is left:
    ~6% of `benchmarks/sched_vs_vllm.py`'s instructions. Frozen cycles are never freed: fine
    when the process ends next, a leak in one that goes on (tests, sweeps)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze and _one_shot:
            gc.freeze()
        if was_enabled:
            gc.enable()
