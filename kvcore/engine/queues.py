"""The scheduler's waiting queues (vLLM's `request_queue.py`): FCFS is a deque, PRIORITY a heap.

Both answer the same small contract: `add` (arrival), `prepend` (a preempted request goes back to
the head; for the heap this is just `add`, its order being `(priority, arrival_time)`), `peek`,
`replace_head` (swap the head for an equal-keyed object: a lazily built request), `pop`,
`remove` (requests by id: one that finished while preempted, under async scheduling), `len`,
iteration in queue order.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterator
from typing import Any


class FCFSQueue:
    __slots__ = ("_q",)

    def __init__(self) -> None:
        self._q: deque = deque()

    def add(self, req: Any) -> None:
        self._q.append(req)

    def prepend(self, req: Any) -> None:
        self._q.appendleft(req)

    def peek(self) -> Any:
        return self._q[0]

    def replace_head(self, req: Any) -> None:
        self._q[0] = req

    def pop(self) -> Any:
        return self._q.popleft()

    def remove(self, request_ids: set[str]) -> None:
        self._q = deque(r for r in self._q if r.request_id not in request_ids)

    def __len__(self) -> int:
        return len(self._q)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._q)


def priority_order(req: Any) -> tuple:
    """The priority policy's order, lowest first (the scheduler preempts the highest)."""
    return (req.priority, req.arrival_time)


class PriorityQueue:
    """Lowest `priority_order` first (ties by request id); a preempted request re-enters by the
    same key."""

    __slots__ = ("_h",)

    def __init__(self) -> None:
        self._h: list = []

    def add(self, req: Any) -> None:
        heapq.heappush(self._h, [req.priority, req.arrival_time, req.request_id, req])

    def prepend(self, req: Any) -> None:
        self.add(req)       # its key puts it back where it was

    def peek(self) -> Any:
        return self._h[0][3]

    def replace_head(self, req: Any) -> None:
        self._h[0][3] = req    # same key: the heap order is unchanged

    def pop(self) -> Any:
        return heapq.heappop(self._h)[3]

    def remove(self, request_ids: set[str]) -> None:
        self._h = [e for e in self._h if e[2] not in request_ids]
        heapq.heapify(self._h)

    def __len__(self) -> int:
        return len(self._h)

    def __iter__(self) -> Iterator[Any]:
        return (e[3] for e in sorted(self._h))


QUEUES = {"fcfs": FCFSQueue, "priority": PriorityQueue}
