"""`DeferredFrees`: vLLM's `defer_block_free` (async scheduling with a connector that loads KV).

With two batches in flight a load could overwrite blocks a batch still writes, so a freed
request's blocks go back to the pool only once the last batch that scheduled it is processed.
Steps that schedule tokens are numbered (`scheduled`); each request remembers the number of the
last one that scheduled it; a free waits for its number to be processed (`processed`). A
preemption victim whose blocks are held this way frees nothing now, so vLLM does not preempt it
(`can_free`).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from kvcore.request import Request


class DeferredFrees:
    def __init__(self, kvm: Any) -> None:
        self.kvm = kvm
        self.sched_step_seq = 0
        self.processed_step_seq = 0
        self.last_sched_seq: dict[str, int] = {}
        self.held: deque[tuple[int, list]] = deque()     # (step number, blocks), in order

    def can_free(self, req: Request) -> bool:
        return self.last_sched_seq.get(req.request_id, 0) <= self.processed_step_seq

    def scheduled(self, reqs: list[Request]) -> None:
        """A step scheduled tokens for these requests."""
        self.sched_step_seq += 1
        seq = self.sched_step_seq
        for req in reqs:
            self.last_sched_seq[req.request_id] = seq

    def free(self, req: Request) -> None:
        """Release the request's blocks now, or hold them until their step is processed."""
        if self.can_free(req):
            self.kvm.free(req)
            return
        blocks = self.kvm.pop_blocks_for_free(req)
        if blocks:
            self.held.append((self.sched_step_seq, blocks))

    def processed(self) -> None:
        """A batch that scheduled tokens was processed: release the blocks it held."""
        self.processed_step_seq += 1
        held = self.held
        while held and held[0][0] <= self.processed_step_seq:
            self.kvm.free_popped(held.popleft()[1])
