"""`DeferredFrees`: vLLM's `defer_block_free` (async scheduling with a connector that loads KV).

With two batches in flight a load could overwrite blocks a batch still writes, so a freed
request's blocks go back to the pool only once the last batch that scheduled it is processed.
Steps that schedule tokens are numbered (`scheduled`); each request remembers the number of the
last one that scheduled it; a free waits for its number to be processed (`processed`). A
preemption victim whose blocks are held this way frees nothing now, so vLLM does not preempt it
(`can_free`).

A request inside a decode window (`decode_windows`) was last scheduled by the schedule() call
before the current one (a window's steps are consecutive and each schedules tokens): its number
is the latest, `sched_step_seq`, while the window is open and is written down when the window's
steps are applied (`window_closed`).
"""

from __future__ import annotations

from collections import deque

from kvcore.block import KVCacheBlock
from kvcore.kv_cache_manager import KVCacheManager
from kvcore.request import Request


class DeferredFrees:
    def __init__(self, kvm: KVCacheManager) -> None:
        self.kvm = kvm
        self.sched_step_seq = 0
        self.processed_step_seq = 0
        self.last_sched_seq: dict[str, int] = {}
        # (step number, a request's tables, or a step's copy-on-write ends: plain blocks), in
        # order
        self.held: deque[tuple[int, list, bool]] = deque()

    def can_free(self, req: Request, now: int) -> bool:
        """Whether the request's blocks can go back now, inside schedule() call ``now``."""
        if req.decode_window_start < now and req.decode_window_start <= req.decode_window_end:
            return self.sched_step_seq <= self.processed_step_seq    # scheduled by call now - 1
        return self._processed(req)

    def _processed(self, req: Request) -> bool:
        """Whether the last step that scheduled it (outside an open window) was processed."""
        return self.last_sched_seq.get(req.request_id, 0) <= self.processed_step_seq

    def window_closed(self, req: Request) -> None:
        """The steps of the request's window up to the last schedule() call were applied: that
        call, the latest that scheduled tokens, scheduled it last."""
        self.last_sched_seq[req.request_id] = self.sched_step_seq

    def scheduled(self, reqs: list[Request]) -> None:
        """A step scheduled tokens for these requests."""
        self.sched_step_seq += 1
        seq = self.sched_step_seq
        for req in reqs:
            self.last_sched_seq[req.request_id] = seq

    def free(self, req: Request) -> None:
        """Release the request's blocks now, or hold them until their step is processed."""
        if self._processed(req):     # (a request being freed is in no open window)
            self.kvm.free(req)
            return
        tables = self.kvm.pop_blocks_for_free(req)
        if any(tables):
            self.held.append((self.sched_step_seq, tables, False))

    def free_copies(self, blocks: list[KVCacheBlock]) -> None:
        """The step's copy-on-write ends (partial hash hits), held until the step that runs the
        copies is processed (vLLM's `_free_cow_retained_blocks`, fenced at the step being
        scheduled: ``sched_step_seq + 1`` before this step is counted), in their order."""
        if not blocks:
            return
        if self.sched_step_seq + 1 <= self.processed_step_seq:
            self.kvm.block_pool.free_blocks(blocks)
            return
        self.held.append((self.sched_step_seq + 1, blocks, True))

    def processed(self) -> None:
        """A batch that scheduled tokens was processed: release the blocks it held."""
        self.processed_step_seq += 1
        held = self.held
        while held and held[0][0] <= self.processed_step_seq:
            _, blocks, copies = held.popleft()
            if copies:
                self.kvm.block_pool.free_blocks(blocks)
            else:
                release(self.kvm, blocks)


def release(kvm: KVCacheManager, tables: list[list[KVCacheBlock]]) -> None:
    """Free a request's tables that `KVCacheManager.pop_blocks_for_free` took, as vLLM does:
    joined in group order and freed reversed in ONE call (scheduler.py `_free_request_blocks`,
    the deferred list's `free_blocks(reversed(blocks))`), so the uncached blocks it prepends go
    to the queue's front together, the last group's tail first, not group by group (a call a
    group gives 4,3,2,1,8,7,6,5 where vLLM gives 8,...,1). The tracer hears each group's part."""
    managers = kvm.coordinator.single_type_managers
    if len(managers) == 1:
        managers[0].free_popped(tables[0])
        return
    ordered = [b for table in reversed(tables) for b in reversed(table)]
    tracer = managers[0].tracer
    if tracer is None:
        kvm.block_pool.free_blocks(ordered)
        return
    lists: tuple[list[int], list[int], list[int]] = ([], [], [])
    kvm.block_pool.free_blocks(ordered, lists)
    for m, table in zip(reversed(managers), reversed(tables), strict=True):
        mine = {b.block_id for b in table}
        ids, freed, evictable = ([i for i in part if i in mine] for part in lists)
        if ids:
            tracer.on_free(m.kv_cache_group_id, ids, freed, evictable)
