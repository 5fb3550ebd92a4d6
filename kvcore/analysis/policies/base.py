"""The eviction-policy interface used by the exact per-capacity simulations (`curve/sim.py`).

The simulator owns the blocks (integer slots) and the key -> slots map, and applies the hit rule;
a policy only *orders the evictable slots*: those that hold a key and that no running request
holds. Its whole contract:

* ``release(slot, now, fresh, next_use)``: the slot, holding a key, becomes evictable. ``now`` is
  a counter that grows with every block touch; a request's blocks are released in vLLM's free
  order (tail first, so its head is released last). ``fresh`` is True when the key was just
  cached (a miss), False when the slot was a hit. ``next_use`` is the time of the next request
  that looks the key up (`inf` when none): only `optimal` reads it.
* ``hold(slot)``: a request adopts the slot (a hit); it is not evictable until released again.
* ``evict() -> slot``: remove and return the victim among the evictable slots (there is one).
* ``keeps_freed``: False for a policy whose freed blocks lose their key at once (`eager`).
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod


class EvictionPolicy(ABC):
    """Orders the evictable slots; the whole contract is the module docstring's."""

    name: str = ""
    keeps_freed: bool = True
    needs_next_use: bool = False

    @abstractmethod
    def release(self, slot: int, now: int, fresh: bool, next_use: float) -> None: ...

    @abstractmethod
    def hold(self, slot: int) -> None: ...

    @abstractmethod
    def evict(self) -> int: ...


class HeapPolicy(EvictionPolicy):
    """A policy that evicts the evictable slot with the smallest priority (ties: smallest slot).

    Entries of held or re-released slots stay in the heap and are skipped when popped: each
    slot's current entry is the one whose version matches.
    """

    def __init__(self) -> None:
        self._heap: list[tuple] = []
        self._version: dict[int, int] = {}

    @abstractmethod
    def priority(self, slot: int, now: int, fresh: bool, next_use: float) -> tuple: ...

    def release(self, slot: int, now: int, fresh: bool, next_use: float) -> None:
        v = self._version.get(slot, 0) + 1
        self._version[slot] = v
        heapq.heappush(self._heap, (self.priority(slot, now, fresh, next_use), slot, v))

    def hold(self, slot: int) -> None:
        self._version[slot] = self._version.get(slot, 0) + 1

    def evict(self) -> int:
        heap, version = self._heap, self._version
        while True:
            _, slot, v = heapq.heappop(heap)
            if version.get(slot) == v:
                del version[slot]
                self.forget(slot)
                return slot

    def forget(self, slot: int) -> None:
        """Drop what the policy remembers about an evicted slot (its key is gone)."""
