"""``fifo``: evict the block whose key was cached first; hits do not refresh it."""

from __future__ import annotations

from kvcore.analysis.policies.base import HeapPolicy


class FIFOPolicy(HeapPolicy):
    name = "fifo"

    def __init__(self) -> None:
        super().__init__()
        self._cached_at: dict[int, int] = {}

    def priority(self, slot: int, now: int, fresh: bool, next_use: float) -> tuple:
        if fresh:
            self._cached_at[slot] = now
        return (self._cached_at[slot],)

    def forget(self, slot: int) -> None:
        del self._cached_at[slot]
