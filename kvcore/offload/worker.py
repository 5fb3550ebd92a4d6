"""`FakeWorker`: the worker half of the connector, finishing every transfer after a fixed number
of engine steps (as the scheduler oracle's fake worker does; docs/offload.md, "Transfer time").

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

A job moves each group's blocks at that group's bytes a block (``group_bytes``: vLLM's worker
sums each group's layers' unpadded pages over its blocks, `v1/kv_offload/cpu/gpu_worker.py:
424-446`, and reports a job's sum when it finishes, loads and stores alike). On the simulated
clock (``bandwidth``: bytes per ms each way) a job takes its bytes over the bandwidth, after the
jobs before it on its stream (copies are serialized): submitted at the start of its step (a
store: of the next step), it is reported at the end of the first step that ends after it is
done. A waited job (flushed store, sync load) finishes in its step; the wait
does not lengthen the step (the clock does not model it).
"""

from __future__ import annotations

from collections import deque

from kvcore.offload.jobs import ConnectorMeta, Job

_STREAMS = ("store", "load", "expedited")


class FakeWorker:
    def __init__(self, store_steps: int, load_steps: int, group_bytes: tuple[int, ...],
                 bandwidth: float | None = None) -> None:
        self.store_steps = store_steps
        self.load_steps = load_steps
        self.group_bytes = group_bytes               # a GPU block's bytes, group by group
        self.bandwidth = bandwidth                   # bytes per ms; None: fixed step counts
        self.busy_until = {s: 0.0 for s in _STREAMS}  # clock mode: each stream's last copy
        # stream -> [job id, step it finishes at the end of, req id (async loads), GPU blocks,
        # bytes]
        self.streams: dict[str, deque[list]] = {s: deque() for s in _STREAMS}
        self.queued: list[tuple[int, int, int]] = []  # (job id, GPU blocks, bytes): stores
        self.bytes = {"load": 0, "store": 0}
        self.blocks = {"load": 0, "store": 0}
        # finished jobs by their bytes, each way: {bytes: jobs} (vLLM observes each job's bytes
        # in its `kv_offload_*_size` histograms, a job of no block's 0 too; a run has few
        # distinct sizes, and the jobs are their sum)
        self.sizes: dict[str, dict[int, int]] = {"load": {}, "store": {}}

    def in_flight(self) -> int:
        return len(self.queued) + sum(len(s) for s in self.streams.values())

    def next_done_ms(self) -> float | None:
        """On the clock (a bandwidth): when the first job in flight finishes; else None."""
        if self.bandwidth is None:
            return None
        return min((s[0][1] for s in self.streams.values() if s), default=None)

    def _wait(self, job_ids: set[int], now: float) -> None:
        for stream in self.streams.values():
            last = max((i for i, e in enumerate(stream) if e[0] in job_ids), default=-1)
            for i in range(last + 1):
                stream[i][1] = min(stream[i][1], now)

    def finished(self, kind: str, n: int, nb: int) -> None:
        """A ``kind`` ("load" or "store") job of ``n`` GPU blocks and ``nb`` bytes finished."""
        self.bytes[kind] += nb
        self.blocks[kind] += n
        sizes = self.sizes[kind]
        sizes[nb] = sizes.get(nb, 0) + 1

    def job_bytes(self, job: Job) -> int:
        """The bytes ``job`` moves: its blocks of each group at that group's bytes (a job of
        one group, no ``group_sizes``: all its blocks at the first's)."""
        sizes = job.group_sizes
        if sizes is None:
            return len(job.gpu_block_ids) * self.group_bytes[0]
        return sum(n * b for n, b in zip(sizes, self.group_bytes, strict=True))

    def _ready(self, stream: str, steps: int, nbytes: int, step: int, t0: float) -> float:
        """When a job submitted now is done: a step number, or a time on the clock."""
        if self.bandwidth is None:
            return step + steps - 1
        start = max(self.busy_until[stream], t0)
        self.busy_until[stream] = done = start + nbytes / self.bandwidth
        return done

    def execute(self, step: int, meta: ConnectorMeta, t0: float = 0.0, t1: float = 0.0
                ) -> tuple[dict[str, list[int]], set[str]]:
        """Run one step's transfers (the step runs from ``t0`` to ``t1`` ms on the clock): the
        jobs reported ({"store": ids, "load": ids}, in report order) and the requests whose
        async load finished."""
        now = step if self.bandwidth is None else t1
        streams = self.streams
        if not (meta.store_jobs or meta.load_jobs or meta.jobs_to_flush or self.queued
                or streams["store"] or streams["load"] or streams["expedited"]):
            return {"store": [], "load": []}, set()     # no transfer anywhere (most steps)
        flush = meta.jobs_to_flush
        stores = dict(meta.store_jobs)
        for jid in sorted(flush):
            job = stores.pop(jid, None)
            if job is not None:
                self.queued.append((jid, len(job.gpu_block_ids), self.job_bytes(job)))
        for jid, n, nb in self.queued:
            self.streams["store"].append(
                [jid, self._ready("store", self.store_steps, nb, step, t0), None, n, nb])
        self.queued = []
        if flush:
            self._wait(flush, now)
        sync = set()
        for jid, job in meta.load_jobs.items():
            n, nb = len(job.gpu_block_ids), self.job_bytes(job)
            if job.sync:
                sync.add(jid)
                self.streams["expedited"].append([jid, now, None, n, nb])
            else:
                self.streams["load"].append(
                    [jid, self._ready("load", self.load_steps, nb, step, t0), job.req_id, n, nb])
        if sync:
            self._wait(sync, now)
        self.queued.extend((jid, len(job.gpu_block_ids), self.job_bytes(job))
                           for jid, job in stores.items())
        done: dict[str, list[int]] = {"store": [], "load": []}
        recv: set[str] = set()
        for name in _STREAMS:
            stream = self.streams[name]
            kind = "store" if name == "store" else "load"
            while stream and stream[0][1] <= now:
                jid, _, rid, n, nb = stream.popleft()
                self.finished(kind, n, nb)
                done[kind].append(jid)
                if rid is not None:
                    recv.add(rid)
        return done, recv
