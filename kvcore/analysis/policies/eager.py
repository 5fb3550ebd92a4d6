"""``eager``: a freed block loses its key at once (the naive free some write-ups of vLLM show).

Only blocks that a running request still holds can be shared, so with one request at a time
(cache mode) nothing is ever hit: the curve is the floor that vLLM's lazy eviction lifts."""

from __future__ import annotations

from kvcore.analysis.policies.base import EvictionPolicy


class EagerPolicy(EvictionPolicy):
    name = "eager"
    keeps_freed = False

    def release(self, slot: int, now: int, fresh: bool, next_use: float) -> None:
        raise AssertionError("eager keeps no freed block")

    def hold(self, slot: int) -> None:
        raise AssertionError("eager keeps no freed block")

    def evict(self) -> int:
        raise AssertionError("eager keeps no freed block")
