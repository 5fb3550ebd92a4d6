"""The CPU tier's section of `kvcli stats` (a replay with `--kv-offloading-size`): what crossed
the host link each way, what the tier held, what it lost, and the hits it served.

Read from our stream's tier events (docs/events.md): `offload_load` / `offload_store` (a job is
created: its chunk keys and GPU blocks), `offload_done` (the worker reported it), `offload_evict`
(chunks the tier dropped to make room) and `offload_offer_failed` (an offer that could not find
its victims), and from `admit.cpu_hit_tokens`. Resident chunks count from a store's creation
(vLLM allocates the slots then) until their eviction; being written until the store is reported;
pinned while a load reads them. Memory: one entry per job in flight, never per event.
"""

from __future__ import annotations

import numpy as np

from kvcore.analysis.stats.attribution import CPU_TIER, EVICTED, EVICTED_BOTH


class CpuTierStats:
    def __init__(self, blocks_per_chunk: int = 1) -> None:
        self.bpc = blocks_per_chunk
        # chunk keys the tier evicted and did not store again (the miss reasons' split);
        # one int per such chunk, as the GPU's evicted history keeps one per hash
        self.gone: set[int] = set()
        self.seen = False                 # any tier event at all (else no section)
        self.jobs: dict[int, tuple[bool, int]] = {}      # in flight: job -> (store, chunks)
        self.loads = self.stores = 0
        self.chunks_loaded = self.chunks_stored = 0
        self.blocks_loaded = self.blocks_stored = 0
        self.sync_loads = 0
        self.evicted = 0
        self.evictions = 0                # eviction batches (offers that evicted)
        self.failed_offers = 0
        self.failed_requests: dict[str, int] = {}
        self.resident = self.pending = self.pinned = 0
        self.max_resident = 0
        self.cpu_hit_tokens = 0           # counted admissions (the hit rate's requests)
        self.cpu_hit_tokens_all = 0       # every admission that looked up
        self.requests_with_cpu_hits = 0

    # -- events ----------------------------------------------------------------------------
    def load(self, ev: dict) -> None:
        self.seen = True
        n = len(ev["keys"])
        self.loads += 1
        self.sync_loads += bool(ev.get("sync"))
        self.blocks_loaded += ev["gpu_blocks"]
        self.jobs[ev["job"]] = (False, n)
        self.pinned += n

    def store(self, ev: dict) -> None:
        self.seen = True
        keys = ev["keys"]
        n = len(keys)
        if self.gone:
            self.gone.difference_update(keys)
        self.stores += 1
        self.blocks_stored += ev["gpu_blocks"]
        self.jobs[ev["job"]] = (True, n)
        self.pending += n
        self.resident += n
        self.max_resident = max(self.max_resident, self.resident)

    def done(self, ev: dict) -> None:
        store, n = self.jobs.pop(ev["job"])
        if store:
            self.pending -= n
            self.chunks_stored += n
        else:
            self.pinned -= n
            self.chunks_loaded += n

    def evict(self, ev: dict) -> None:
        self.seen = True
        keys = ev["keys"]
        self.gone.update(keys)
        n = len(keys)
        self.evicted += n
        self.evictions += 1
        self.resident -= n

    def offer_failed(self, ev: dict) -> None:
        self.seen = True
        self.failed_offers += 1
        rid = ev["req"]
        self.failed_requests[rid] = self.failed_requests.get(rid, 0) + 1

    def admit(self, ev: dict, counted: bool) -> None:
        cpu = ev.get("cpu_hit_tokens") or 0
        if not cpu:
            return
        self.cpu_hit_tokens_all += cpu
        if counted:
            self.cpu_hit_tokens += cpu
            self.requests_with_cpu_hits += 1

    def split_misses(self, ev: dict, hashes: list[int], hit: int, bs: int, codes) -> np.ndarray:
        """The GPU miss reasons of an admission's missed blocks with the tier: the first
        ``cpu_hit_tokens`` of them the tier served (`cpu_tier`); an `evicted` block after them
        whose chunk the tier evicted too is `evicted_both`."""
        codes = np.asarray(codes, dtype=np.int8)
        served = min((ev.get("cpu_hit_tokens") or 0) // bs, len(codes))
        codes[:served] = CPU_TIER
        if self.gone:
            bpc = self.bpc
            n_full = len(hashes)
            gone = self.gone
            for j in np.flatnonzero(codes[served:] == EVICTED).tolist():
                last = ((hit + served + j) // bpc + 1) * bpc - 1   # the chunk's key block
                if last < n_full and hashes[last] in gone:
                    codes[served + j] = EVICTED_BOTH
        return codes

    # -- the section ---------------------------------------------------------------------------
    def to_json(self, prompt_tokens: int, gpu_hit_tokens: int, top: int) -> dict | None:
        if not self.seen:
            return None
        worst = sorted(self.failed_requests.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        return {
            "cpu_hit_tokens": self.cpu_hit_tokens,
            "requests_with_cpu_hits": self.requests_with_cpu_hits,
            "hit_rate_with_cpu": ((gpu_hit_tokens + self.cpu_hit_tokens) / prompt_tokens
                                  if prompt_tokens else 0.0),
            "cpu_hit_tokens_all_admissions": self.cpu_hit_tokens_all,
            "loads": self.loads, "sync_loads": self.sync_loads,
            "chunks_loaded": self.chunks_loaded, "gpu_blocks_loaded": self.blocks_loaded,
            "stores": self.stores, "chunks_stored": self.chunks_stored,
            "gpu_blocks_stored": self.blocks_stored,
            "cpu_evictions": self.evicted, "eviction_batches": self.evictions,
            "failed_offers": self.failed_offers,
            "failed_offers_by_request": [{"req": r, "offers": n} for r, n in worst],
            "max_resident_chunks": self.max_resident, "resident_chunks_end": self.resident,
            "jobs_in_flight_end": len(self.jobs),
        }
