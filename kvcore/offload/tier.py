"""`OffloadTier`: the CPU tier in a replay's engine loop: the connector, the fake worker, the
per-step record and the run's totals.

Per engine step (`kvcore.engine.engine_loop`): `schedule()` (the connector works inside it),
`scheduled` (the worker runs the step's transfers: `execute`), the model's update, `deliver`
(the reported jobs complete; loaded requests may be promoted next step), then `end_step`, which
closes the step's record and adds its keys to the step line. What the outputs gain (the step
line's keys, the summary's `offload` object) is built in `tier_outputs.py`.
"""

from __future__ import annotations

from typing import Any

from kvcore.offload.completions import update_connector_output
from kvcore.offload.config import OffloadConfig
from kvcore.offload.connector import OffloadingConnector
from kvcore.offload.hybrid import HybridConnector, key_hash_int, key_out
from kvcore.offload.jobs import ConnectorMeta
from kvcore.offload.keys import key_group, key_int
from kvcore.offload.lookup_delays import LookupDelays
from kvcore.offload.options import WINDOWED_OR_MAMBA
from kvcore.offload.record import ConnectorPrefixStats
from kvcore.offload.tier_outputs import offer_calls, offered_chunks, step_fields
from kvcore.offload.worker import FakeWorker
from kvcore.request import RequestStatus


class OffloadTier:
    def __init__(self, cfg: OffloadConfig, kvm: Any, *, enable_events: bool,
                 sink: Any = None) -> None:
        self.cfg = cfg
        self.sink = sink            # our event stream (`JsonlEvents`), or None
        # (prefix caching off: no GPU sharing, so nothing waits for another request's load)
        # (a Mamba group alone too: its states are stored through the hand-off, `hybrid_mamba`;
        # and a windowed group alone: vLLM applies the windowed rules to any one group, and the
        # one-group connector assumes a full-attention table, with no null block)
        hybrid = len(kvm.coordinator.single_type_managers) > 1 or any(
            type(m.kv_cache_spec).__name__ in WINDOWED_OR_MAMBA
            for m in kvm.coordinator.single_type_managers)
        # a key in the outputs: its hash's 64-bit int; [group, hash] with several groups
        self.key: Any = key_out if hybrid else key_int
        # in our event stream (docs/events.md): the hash's int, one entry per group's key; the
        # groups share their hashes (the same tokens), so several groups add each key's group
        # in `groups`, parallel to `keys` (one group's lines stay as they were, byte for byte)
        self.event_key: Any = key_hash_int if hybrid else key_int
        self.hybrid = hybrid
        self.conn = (HybridConnector if hybrid else OffloadingConnector)(
            cfg, kvm, enable_events=enable_events, enable_prefix_caching=kvm.enable_caching)
        # a GPU block copied is its own group's layers (`OffloadConfig.group_copy_bytes`)
        self.worker = FakeWorker(cfg.store_steps, cfg.load_steps,
                                 cfg.group_copy_bytes or (cfg.kv_bytes_per_block,),
                                 cfg.bandwidth)
        self.stats = ConnectorPrefixStats()
        self.totals = {"load_jobs": 0, "store_jobs": 0, "flushed_jobs": 0, "store_offers": 0,
                       "alloc_failures": 0, "cpu_evictions": 0, "lookup_deferrals": 0,
                       "chunks_stored": 0, "chunks_loaded": 0}
        self.max_cpu_used = 0
        self.reported: dict[int, bool] = {}    # job id -> is a store, until its line is out
        # cache mode's jobs, done at once, written by `end_step` after the step's evictions
        # (in the order engine mode writes them: they came before the evictions that made room)
        self.held: list[tuple[ConnectorMeta, list[int]]] = []
        self.load_started: dict[str, int] = {}  # req -> the step its async load was created
        self.load_waits: list[int] = []        # steps from that step to its first compute
        self.delays = LookupDelays()           # vLLM's async lookup delays, simulated

    def execute(self, step: int, meta: ConnectorMeta, t0: float, t1: float
                ) -> tuple[list[int], set[str]]:
        """The worker runs the step's transfers (the step spans ``t0``..``t1`` ms): (the jobs
        it reported, in report order; the requests whose async load finished), delivered with
        the batch's output."""
        done, recv = self.worker.execute(step, meta, t0, t1)
        for job in meta.load_jobs.values():
            if not job.sync:
                self.load_started[job.req_id] = step
        t = self.totals
        t["load_jobs"] += len(meta.load_jobs)
        t["store_jobs"] += len(meta.store_jobs)
        t["flushed_jobs"] += len(meta.jobs_to_flush)
        for kind, ids in done.items():
            for j in ids:
                self.reported[j] = kind == "store"
        return done["store"] + done["load"], recv

    def attach_events(self, recorder: Any, sink: Any) -> None:
        """Write the tier's events into our stream; `admit` lines gain ``cpu_hit_tokens``."""
        self.sink = sink
        plain = recorder.admit_extra
        lookups = self.conn.rec

        def admit_fields(req: Any) -> dict:
            out = plain(req) if plain is not None else {}
            out["cpu_hit_tokens"] = lookups.lookups.get(req.request_id, (0, 0))[1]
            return out

        recorder.admit_extra = admit_fields

    def complete_now(self, meta: ConnectorMeta) -> None:
        """Cache mode: the step's transfers finish at once (no clock, one request at a time)."""
        w, done = self.worker, []
        for kind, jobs in (("store", meta.store_jobs), ("load", meta.load_jobs)):
            for jid, job in jobs.items():
                w.finished(kind, len(job.gpu_block_ids), w.job_bytes(job))
                done.append(jid)
                self.reported[jid] = kind == "store"
        if self.sink is not None:
            self.held.append((meta, done))
        else:
            for jid in done:
                del self.reported[jid]
        t = self.totals
        t["load_jobs"] += len(meta.load_jobs)
        t["store_jobs"] += len(meta.store_jobs)
        update_connector_output(self.conn, done)

    def scheduled(self, ctx: Any, out: Any, t_end: float) -> tuple[list[int], set[str]]:
        """After an engine step's `schedule()` (it spans ``ctx.t_ms`` .. ``t_end``): the worker
        runs its transfers (`execute`), the requests' records get their lookups and load waits.
        Returns the transfer reports."""
        reports = self.execute(ctx.step, out.kv_meta, ctx.t_ms, t_end)
        self.delays.note(self.conn.rec, ctx.t_ms)
        self.note_lookups(ctx.records, ctx.step)
        self.note_admitted(out.admitted, ctx.step)
        return reports

    def note_lookups(self, records: dict, step: int) -> None:
        """The step's accepted lookups into the requests' records (``extra``: the oracle's
        per-request ``lookups``, ``gpu_hit_tokens``, ``cpu_hit_tokens``); a request's
        ``hit_tokens`` is its first lookup's GPU + CPU hit (vLLM's num_cached_tokens)."""
        for rid, (gpu, cpu) in self.conn.rec.lookups.items():
            rec = records[rid]
            extra = rec.extra
            if extra is None:
                extra = rec.extra = {"gpu_hit_tokens": 0, "cpu_hit_tokens": 0, "lookups": []}
                rec.hit_tokens = gpu + cpu
            extra["lookups"].append([step, gpu, cpu])
            extra["gpu_hit_tokens"] += gpu
            extra["cpu_hit_tokens"] += cpu

    def note_admitted(self, admitted: dict[str, int], step: int) -> None:
        """Requests that start computing after an async load: how long they waited."""
        for rid in admitted:
            start = self.load_started.pop(rid, None)
            if start is not None:
                self.load_waits.append(step - start)

    def deliver(self, sched: Any, done: list[int], recv: set[str]) -> None:
        """A batch's transfer reports reach the scheduler (after its finishes, as in vLLM)."""
        update_connector_output(self.conn, done)
        for rid in recv:
            req = sched.requests.get(rid)
            if req is not None and req.status == RequestStatus.WAITING_FOR_REMOTE_KVS:
                sched.finished_recving.add(rid)

    def cpu_state(self) -> tuple[int, int, int]:
        """(chunks resident, of them being written, of them pinned by loads)."""
        m = self.conn.manager
        used = m.num_allocated - len(m.free_list)
        return used, m.num_write_pending, used - m.num_evictable - m.num_write_pending

    def end_step(self, sched: Any, meta: ConnectorMeta | None, done: list[int] | None,
                 recv: set[str] | None, line: dict | None) -> None:
        """Close the step's record into the totals; with a step line (``line``), add the
        offload keys to it: this step's `schedule()` (``meta``) and the reports of the batch
        processed in it (``done``, ``recv``)."""
        rec = self.conn.rec
        used = self.conn.manager.num_allocated - len(self.conn.manager.free_list)
        self.max_cpu_used = max(self.max_cpu_used, used)
        t = self.totals
        t["store_offers"] += sum(len(offer_calls(o)) for o in rec.offers.values())
        t["alloc_failures"] += len(rec.alloc_failures)
        t["cpu_evictions"] += len(rec.evicted)
        t["lookup_deferrals"] += len(rec.deferred)
        t["chunks_stored"] += rec.chunks_stored
        t["chunks_loaded"] += rec.chunks_loaded
        if line is not None:
            line.update(step_fields(self, sched, meta, done, recv))
        if self.sink is not None:
            for rid in rec.alloc_failures:
                self.sink.write("offload_offer_failed", rid, offered=offered_chunks(rec.offers[rid]))
            if rec.evicted:
                self.sink.write("offload_evict", None, **self._keys(rec.evicted))
            for held_meta, held_done in self.held:
                self._events(held_meta, held_done)
                for jid in held_done:
                    del self.reported[jid]
            self.held.clear()
            self._events(meta, done)
        rec.reset()
        for j in done or ():
            del self.reported[j]

    def _events(self, meta: ConnectorMeta | None, done: list[int] | None) -> None:
        """The step's tier events into our stream (docs/events.md), after its block events:
        failed offers, CPU evictions, the jobs created, the jobs reported."""
        write = self.sink.write
        if meta is not None:
            for jid, job in meta.load_jobs.items():
                write("offload_load", job.req_id, job=jid, **self._keys(job.keys),
                      gpu_blocks=len(job.gpu_block_ids), sync=job.sync)
            for jid, job in meta.store_jobs.items():
                write("offload_store", job.req_id, job=jid, **self._keys(job.keys),
                      gpu_blocks=len(job.gpu_block_ids))
        for jid in done or ():
            write("offload_done", None, job=jid, store=self.reported[jid])

    def _keys(self, keys: list[bytes]) -> dict[str, list[int]]:
        """An event's ``keys`` (and, over several groups, their ``groups``)."""
        out = {"keys": [self.event_key(k) for k in keys]}
        if self.hybrid:
            out["groups"] = [key_group(k) for k in keys]
        return out
