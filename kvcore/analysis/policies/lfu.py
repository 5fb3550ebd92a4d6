"""``lfu``: evict the block whose key was used the fewest times since it was cached (the miss
that cached it counts as one use); ties go to the least recently used, as in LRU."""

from __future__ import annotations

from kvcore.analysis.policies.base import HeapPolicy


class LFUPolicy(HeapPolicy):
    name = "lfu"

    def __init__(self) -> None:
        super().__init__()
        self._uses: dict[int, int] = {}

    def priority(self, slot: int, now: int, fresh: bool, next_use: float) -> tuple:
        uses = 1 if fresh else self._uses[slot] + 1
        self._uses[slot] = uses
        return (uses, now)

    def forget(self, slot: int) -> None:
        del self._uses[slot]
