"""`OfferCounts`: how many times each chunk key was offered, for vLLM's `store_threshold`
(`CPUOffloadingManager._record_accesses`): a new chunk is stored only once it has been offered
that many times. The table holds at most ``max_size`` keys, least recently offered first; when
it is full, the least recently offered key not in the current offer makes room (none left: the
new key is not counted).
"""

from __future__ import annotations

from collections import OrderedDict


class OfferCounts(OrderedDict):
    """key -> offers seen (an ordered dict, least recently offered first)."""

    def __init__(self, max_size: int) -> None:
        super().__init__()
        self.max_size = max_size

    def count(self, keys: list[bytes]) -> None:
        """Count one offer of each key."""
        protected = set()
        for key in keys:
            if key in self:
                self.move_to_end(key)
                self[key] += 1
                protected.add(key)
        unprotected = len(self) - len(protected)
        for key in keys:
            if key in self:
                continue
            if len(self) >= self.max_size:
                if unprotected == 0:
                    continue
                self.popitem(last=False)
                unprotected -= 1
            self[key] = 1
