"""`ClusterOptions`: what a cluster run adds to the replay's options (the replicas, the routers
compared, the router's seed, the metrics' scrape interval, the KV events' lag), and the two
callables a run is handed: where each replica's streams go, and who hears of its progress.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Protocol

# (router, replica, "events" | "vllm") -> the file to write that stream to
OpenEvents = Callable[[str, int, str], IO[bytes]]


class Progress(Protocol):
    """What `run_cluster` tells of its progress (`kvcli.progress_bar.Advance` is one)."""

    def __call__(self, n: int = 1) -> None: ...

    def total(self, n: int) -> None: ...


@dataclass(frozen=True, slots=True)
class ClusterOptions:
    replicas: int = 2
    routers: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (("round_robin", ()),)
    seed: int = 0
    metrics_interval_ms: float = 50.0   # llm-d's scrape interval
    kv_event_lag_ms: float = 0.0
