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
from kvcore.hashing import BlockHasher
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


def start(hasher: BlockHasher | None, order: Sequence[TraceRequest]
          ) -> PromptHashThread | None:
    """Start hashing the prompts of `order` (the order their requests will be built in) for
    `hasher`, or None where it does not apply: the pure-Python build, no prefix caching, a hash
    other than the default sha256, no eligible request."""
    native = _native_for(hasher)
    if native is None or not isinstance(hasher, TraceBlockHasher):
        return None
    jobs = _jobs(order, hasher.block_size, [tr.index for tr in order])
    if jobs is None:
        return None
    # (a caller may replay some of a trace's requests: the indexes need not be 0 .. n - 1)
    n_index = max(tr.index for tr in order) + 1
    return PromptHashThread(native.HashAhead(hasher.none_hash, hasher.block_size, jobs, n_index,
                                             WINDOW, MAX_BYTES), hasher)


def _native_for(hasher: BlockHasher | None) -> Any:
    """`native_ahead` where the thread applies to `hasher` (see `start`), else None."""
    native = compiled.native("kvcore.engine.native_ahead")
    # (EAGLE's lookahead hashes come from a plain `BlockHasher`: no prompt hashes ahead)
    if native is None or not isinstance(hasher, TraceBlockHasher) or hasher.head is None \
            or not 4 <= hasher.block_size < 13_000:
        return None
    return native


def _jobs(requests: Sequence[TraceRequest], bs: int, numbers: Sequence[int]) -> list | None:
    """`HashAhead`'s jobs for `requests` (in the order they will be built), numbered by
    `numbers`; None when none is eligible."""
    jobs = [(n, tr.hash_ids, tr.trace_block_size, tr.prompt_len) if eligible(tr, bs)
            else (n, None, 0, 0) for n, tr in zip(numbers, requests, strict=True)]
    return jobs if any(job[1] for job in jobs) else None


@contextmanager
def running(hasher: BlockHasher | None, order: Sequence[TraceRequest]) -> Iterator[None]:
    """`start` for the block, the thread stopped and joined when it ends (however it ends)."""
    hashing = start(hasher, order)
    try:
        yield
    finally:
        if hashing is not None:
            hashing.close()


class Segments:
    """The prompt-hash thread of a replay that reads its requests as it goes (`read_ahead`):
    each chunk of requests read (`feed`, in arrival order) gets its own `HashAhead`, started
    when the requests built reach it: the first chunk at once, the next one once half of the
    one before is taken, so that at most two threads run and the hashes held are those of
    about one chunk ahead of the requests built (which, on an engine behind its trace, lag
    far behind the arrivals). A chunk is dropped once a later one is taken from: a request
    built that late (out of arrival order) hashes on the replay's thread, as any request
    without a job does. Same hashes either way."""

    __slots__ = ("bs", "chunks", "hasher", "native", "next_no", "where")

    def __init__(self, native: Any, hasher: TraceBlockHasher) -> None:
        self.native = native
        self.hasher = hasher
        self.bs = hasher.block_size
        # chunk number -> [its jobs, its trace indexes, its thread once started]
        self.chunks: dict[int, list[Any]] = {}
        self.next_no = 0
        self.where: dict[int, tuple[int, int]] = {}    # trace index -> (chunk number, job)
        hasher.ahead = self

    def feed(self, chunk: list[TraceRequest]) -> None:
        """The next requests read, in the order they arrive."""
        if self.native is None:             # closed: the replay is over
            return
        jobs = _jobs(chunk, self.bs, range(len(chunk)))
        if jobs is None:
            return
        no = self.next_no
        self.next_no += 1
        indexes = [tr.index for tr in chunk]
        self.chunks[no] = [jobs, indexes, None]
        for i, index in enumerate(indexes):
            self.where[index] = (no, i)
        if not any(c[2] is not None for c in self.chunks.values()):
            self._start(no)

    def take(self, index: int) -> list[bytes] | None:
        got = self.where.pop(index, None)
        if got is None or got[0] not in self.chunks:
            return None
        no, job = got
        for old in [n for n in self.chunks if n < no]:      # behind the requests built
            self._drop(old)
        c = self.chunks[no]
        if c[2] is None:
            self._start(no)
        if 2 * job >= len(c[1]) and no + 1 in self.chunks and self.chunks[no + 1][2] is None:
            self._start(no + 1)
        return c[2].ahead.take(job)

    def close(self) -> None:
        for no in list(self.chunks):
            self._drop(no)
        self.hasher.ahead = None
        self.native = None

    def _start(self, no: int) -> None:
        c = self.chunks[no]
        ahead = self.native.HashAhead(self.hasher.none_hash, self.bs, c[0], len(c[0]), WINDOW,
                                      MAX_BYTES)
        c[0] = None                         # (the thread holds its own copy of the ids)
        c[2] = PromptHashThread(ahead, self.hasher)
        self.hasher.ahead = self            # (PromptHashThread set its own)

    def _drop(self, no: int) -> None:
        _, indexes, thread = self.chunks.pop(no)
        if thread is not None:
            thread.ahead.close()
            thread.thread.join()
        for index in indexes:
            self.where.pop(index, None)


@contextmanager
def segments(hasher: BlockHasher | None) -> Iterator[Segments | None]:
    """A `Segments` for the block (None where it does not apply: see `start`), closed when it
    ends (however it ends)."""
    native = _native_for(hasher)
    if native is None or not isinstance(hasher, TraceBlockHasher):
        yield None
        return
    parts = Segments(native, hasher)
    try:
        yield parts
    finally:
        parts.close()
