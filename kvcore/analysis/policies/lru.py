"""``lru``: vLLM's policy. The free queue is an ordered list: freed cached blocks are appended
(most recent last), a hit removes its block from the list, and the front is evicted first.
Because a request frees its blocks tail first, its head block is the most recent of them and
its tail blocks are evicted first (the deepest prefix blocks are the least likely to be hit)."""

from __future__ import annotations

from collections import OrderedDict

from kvcore.analysis.policies.base import EvictionPolicy


class LRUPolicy(EvictionPolicy):
    name = "lru"

    def __init__(self) -> None:
        self._queue: OrderedDict[int, None] = OrderedDict()

    def release(self, slot: int, now: int, fresh: bool, next_use: float) -> None:
        self._queue[slot] = None

    def hold(self, slot: int) -> None:
        del self._queue[slot]

    def evict(self) -> int:
        return self._queue.popitem(last=False)[0]
