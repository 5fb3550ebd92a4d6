"""Eviction policies by name, for `kvcli curve --policies` (contract in `base.py`).

Adding a policy is one file with an `EvictionPolicy` subclass and one line here.
"""

from __future__ import annotations

from kvcore.analysis.policies.base import EvictionPolicy, HeapPolicy
from kvcore.analysis.policies.eager import EagerPolicy
from kvcore.analysis.policies.fifo import FIFOPolicy
from kvcore.analysis.policies.lfu import LFUPolicy
from kvcore.analysis.policies.lru import LRUPolicy
from kvcore.analysis.policies.optimal import OptimalPolicy

POLICIES: dict[str, type[EvictionPolicy]] = {
    p.name: p for p in (LRUPolicy, FIFOPolicy, LFUPolicy, EagerPolicy, OptimalPolicy)
}


def make_policy(name: str) -> EvictionPolicy:
    """A fresh policy instance; KeyError for an unknown name (the CLI checks names first)."""
    return POLICIES[name]()


__all__ = ["POLICIES", "EvictionPolicy", "HeapPolicy", "make_policy"]
