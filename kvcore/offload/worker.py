"""`FakeWorker`: the worker half of the connector, finishing every transfer after a fixed number
of engine steps (the oracle's fake worker; `../shared/oracle/tool/OFFLOAD.md`, section 3).

Three FIFO streams (store, load, expedited = sync loads) report their jobs strictly in
submission order. Per executed step, in the order vLLM's model runner drives the real worker:

1. the stores queued last step, and this step's flushed stores (taken out of this step's
   stores), are submitted; a flushed store is waited for, which finishes every job submitted
   before it on its stream;
2. this step's loads are submitted: async ones finish ``load_steps`` steps later (at the end of
   step ``t + load_steps - 1``), sync ones are waited for;
3. this step's other stores are queued for the next step (so a store created in step N is
   reported at the end of step ``N + store_steps``);
4. each stream reports its finished jobs: stores, then loads, then sync loads.
"""

from __future__ import annotations

from collections import deque

from kvcore.offload.connector import ConnectorMeta

_STREAMS = ("store", "load", "expedited")


class FakeWorker:
    def __init__(self, store_steps: int, load_steps: int, block_bytes: int) -> None:
        self.store_steps = store_steps
        self.load_steps = load_steps
        self.block_bytes = block_bytes
        # stream -> [job id, step it finishes at the end of, req id (async loads), GPU blocks]
        self.streams: dict[str, deque[list]] = {s: deque() for s in _STREAMS}
        self.queued: list[tuple[int, int]] = []      # (job id, GPU blocks): stores to submit
        self.bytes = {"load": 0, "store": 0}
        self.blocks = {"load": 0, "store": 0}

    def in_flight(self) -> int:
        return len(self.queued) + sum(len(s) for s in self.streams.values())

    def _wait(self, job_ids: set[int], step: int) -> None:
        for stream in self.streams.values():
            last = max((i for i, e in enumerate(stream) if e[0] in job_ids), default=-1)
            for i in range(last + 1):
                stream[i][1] = min(stream[i][1], step)

    def execute(self, step: int, meta: ConnectorMeta) -> tuple[dict[str, list[int]], set[str]]:
        """Run one step's transfers: ({"store": ids, "load": ids} reported, in report order;
        the requests whose async load finished)."""
        flush = meta.jobs_to_flush
        stores = dict(meta.store_jobs)
        for jid in sorted(flush):
            job = stores.pop(jid, None)
            if job is not None:
                self.queued.append((jid, len(job.gpu_block_ids)))
        for jid, n in self.queued:
            self.streams["store"].append([jid, step + self.store_steps - 1, None, n])
        self.queued = []
        if flush:
            self._wait(flush, step)
        sync = set()
        for jid, job in meta.load_jobs.items():
            n = len(job.gpu_block_ids)
            if job.sync:
                sync.add(jid)
                self.streams["expedited"].append([jid, step, None, n])
            else:
                self.streams["load"].append([jid, step + self.load_steps - 1, job.req_id, n])
        if sync:
            self._wait(sync, step)
        self.queued.extend((jid, len(job.gpu_block_ids)) for jid, job in stores.items())
        done: dict[str, list[int]] = {"store": [], "load": []}
        recv: set[str] = set()
        for name in _STREAMS:
            stream = self.streams[name]
            kind = "store" if name == "store" else "load"
            while stream and stream[0][1] <= step:
                jid, _, rid, n = stream.popleft()
                self.bytes[kind] += n * self.block_bytes
                self.blocks[kind] += n
                done[kind].append(jid)
                if rid is not None:
                    recv.add(rid)
        return done, recv
