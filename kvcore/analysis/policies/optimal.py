"""``optimal``: Belady's offline policy, evict the block whose key is next needed the latest.

It reads the future (the next request that looks the key up), so it is an upper bound for
what an online policy could reach with this capacity, not something an engine can run. Among
keys next needed by the same request, the deeper block (later in the prompt) goes first,
because it can only hit if every block before it does."""

from __future__ import annotations

from kvcore.analysis.policies.base import HeapPolicy


class OptimalPolicy(HeapPolicy):
    name = "optimal"
    needs_next_use = True

    def priority(self, slot: int, now: int, fresh: bool, next_use: float) -> tuple:
        return (-next_use,)
