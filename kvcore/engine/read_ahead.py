"""A replay's requests read a little ahead of their arrival, never all at once.

A trace too long to hold (`kvcore.traces.stream.TraceStream`) is read from its file as the
replay goes; a held one is walked the same way, so both take one path. `read_ahead` keeps
`CHUNK` to `2 * CHUNK` requests read past the one it hands out, and hands each chunk, as it
is read, to the prompt-hash thread (`hash_ahead.Segments`), so that a chunk's prompt hashes are
computed while the replay still works through the one before.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

from kvcore.traces import TraceRequest

CHUNK = 256


def read_ahead(order: Iterable[TraceRequest], hashes: Callable[[], Any]
               ) -> Iterator[TraceRequest]:
    """`order`'s requests one by one, read a chunk ahead; ``hashes()`` is asked, at each chunk
    read, for the prompt-hash thread to `feed` it to (None: there is none)."""
    source = iter(order)
    ready: deque[TraceRequest] = deque()

    def more() -> None:
        chunk = list(islice(source, CHUNK))
        if chunk:
            taker = hashes()
            if taker is not None:
                taker.feed(chunk)
            ready.extend(chunk)

    more()
    while ready:
        if len(ready) <= CHUNK:
            more()
        yield ready.popleft()
