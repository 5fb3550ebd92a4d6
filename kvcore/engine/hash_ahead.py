"""Hash-id prompts hashed ahead on a second thread (the compiled build's `native_ahead.pyx`).

A replay hashes each prompt's full blocks when the request is built (`hash_memo.py`): on the
Mooncake conversation trace that was an eighth of the replay's thread (the sha256 chains, the
trace-block table around them). Those hashes depend on the trace alone, and the replay knows the
order its requests will be built in (arrival order), so `start` hands the eligible ones to
`native_ahead.HashAhead`, whose thread computes them without the interpreter's lock while the
replay runs; `TraceBlockHasher` takes a request's hashes from it exactly where it would have
hashed them itself (same conditions, same bytes: `tests/test_hash_ahead.py`), and hashes on its
own thread whenever the job is not there. The thread stays at most 512 requests (or 64 MB of
hashes) ahead of the requests built.

Measured: see docs/replay-speed.md ("Prompt hashes on the second thread").
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from kvcore import compiled
from kvcore.engine.hash_memo import TraceBlockHasher
from kvcore.interrupts import start_without_signals
from kvcore.traces import TraceRequest

TOKEN_LIMIT = 1 << 31      # pickle writes larger ints with another opcode (the Python path's)
WINDOW = 512               # requests the thread may run ahead of the last one built
MAX_BYTES = 64 << 20       # hashes it may hold that no request took yet


class PromptHashThread:
    """The running thread and its `HashAhead`; `close` stops and joins it (idempotent)."""

    __slots__ = ("ahead", "hasher", "thread")

    def __init__(self, ahead: Any, hasher: TraceBlockHasher) -> None:
        self.ahead = ahead
        self.hasher = hasher
        self.thread = threading.Thread(target=ahead.run, name="prompt hashes", daemon=True)
        hasher.ahead = ahead
        start_without_signals(self.thread)      # a Ctrl-C always reaches the replay's thread

    def close(self) -> None:
        self.hasher.ahead = None
        self.ahead.close()
        self.thread.join()


def eligible(tr: TraceRequest, bs: int) -> bool:
    """Whether the request's prompt hashes can be computed ahead: hash ids, no extra keys (the
    trace-block table's own conditions), every token a pickle BININT or smaller."""
    tb = tr.trace_block_size
    ids = tr.hash_ids
    return (ids is not None and tb is not None and tb > 0 and tb % bs == 0
            and tr.lora is None and not tr.cache_salt
            and (not ids or (min(ids) >= 0 and (max(ids) + 1) * tb <= TOKEN_LIMIT)))


def start(hasher: TraceBlockHasher | None, order: Sequence[TraceRequest]
          ) -> PromptHashThread | None:
    """Start hashing the prompts of `order` (the order their requests will be built in) for
    `hasher`, or None where it does not apply: the pure-Python build, no prefix caching, a hash
    other than the default sha256, no eligible request."""
    native = compiled.native("kvcore.engine.native_ahead")
    if native is None or hasher is None or hasher.head is None:
        return None
    bs = hasher.block_size
    if not 4 <= bs < 13_000:
        return None
    jobs = [(tr.index, tr.hash_ids, tr.trace_block_size, tr.prompt_len)
            if eligible(tr, bs) else (tr.index, None, 0, 0) for tr in order]
    if not any(job[1] for job in jobs):
        return None
    # (a caller may replay some of a trace's requests: the indexes need not be 0 .. n - 1)
    n_index = max(tr.index for tr in order) + 1
    return PromptHashThread(native.HashAhead(hasher.none_hash, bs, jobs, n_index, WINDOW,
                                             MAX_BYTES), hasher)


@contextmanager
def running(hasher: TraceBlockHasher | None, order: Sequence[TraceRequest]) -> Iterator[None]:
    """`start` for the block, the thread stopped and joined when it ends (however it ends)."""
    hashing = start(hasher, order)
    try:
        yield
    finally:
        if hashing is not None:
            hashing.close()
