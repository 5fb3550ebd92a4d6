"""The CPU tier's section of `kvcli stats` (a replay with `--kv-offloading-size`): what crossed
the host link each way, what the tier held, what it lost, and the hits it served.

Read from our stream's tier events (docs/events.md): `offload_load` / `offload_store` (a job is
created: its chunk keys and GPU blocks), `offload_done` (the worker reported it), `offload_evict`
(chunks the tier dropped to make room) and `offload_offer_failed` (an offer that could not find
its victims), and from `admit.cpu_hit_tokens`. Resident chunks count from a store's creation
(vLLM allocates the slots then) until their eviction; being written until the store is reported;
pinned while a load reads them. Memory: one entry per job in flight, never per event.

Over several KV cache groups a key is a group's (the event's `groups` names each key's group):
the groups share their hashes (the same tokens), so a hash alone does not say which group's
chunk the tier dropped or stored again. The counts are of keys, as the replay's summary counts
them; the miss split reads the reference group's keys (`evicted_both`) and, with a windowed
group beside the full-attention ones, every full group's (`cpu_window`, cpu_window.py).
"""

from __future__ import annotations

import numpy as np

from kvcore.analysis.event_fields import FieldWorded, shown
from kvcore.analysis.stats.attribution import CPU_TIER, CPU_WINDOW, EVICTED, EVICTED_BOTH
from kvcore.analysis.stats.cpu_window import WINDOWED, FullGroupChunks
from kvcore.analysis.stats.entry_checks import check_hashes, count, flag
from kvcore.analysis.stats.per_block import bad_group
from kvcore.errors import InputError


class CpuTierStats:
    def __init__(self, blocks_per_chunk: int = 1, ref_group: int = 0,
                 group_types: list[str] | None = None,
                 block_sizes: list[int] | None = None) -> None:
        """``ref_group``: the miss reasons' reference group (`misses.MissStats.ref`), of the
        header's groups (``group_types``; None: one full-attention group) and their blocks
        (``block_sizes``; None: one size)."""
        types = group_types or ["full_attention"]
        self.bpc = blocks_per_chunk
        self.ref = ref_group
        self.n_groups = len(types)
        # `cpu_window` (cpu_window.py) only where vLLM's lookup has both kinds of group: full
        # groups scanned as a prefix and windowed ones scanned for their window
        windowed = [t in WINDOWED for t in types]
        self.window: FullGroupChunks | None = (
            FullGroupChunks(types, blocks_per_chunk, block_sizes)
            if any(windowed) and not all(windowed) else None)
        # the groups whose keys the miss split reads (the reference group is a full one)
        self.tracked: tuple[int, ...] = (ref_group,) if self.window is None \
            else self.window.groups
        # the reference group's chunk keys the tier evicted and did not store again (the miss
        # reasons' split, which reads only that group's hashes); one int per such chunk, as the
        # GPU's evicted history keeps one per hash
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
    def group_keys(self, ev: dict) -> dict[int, list[int]]:
        """The event's keys of each tracked group (`tracked`; a stream of one group: all of
        them, group 0's). Over several groups ``groups`` must name each key's group: a wrong
        shape raises the ValueError `event_fields.misfit` words, an index past the header's
        groups an `InputError` naming the field."""
        keys = ev["keys"]
        check_hashes(keys, "keys")      # (a null or true key was a chunk of its own)
        groups = ev.get("groups")
        if groups is None:
            if self.n_groups == 1:
                return {0: keys}
            raise InputError(f"missing: a stream of {self.n_groups} KV cache groups names each "
                             "key's group (a stream of an older kvcli: replay it again)",
                             field="groups")
        if type(groups) is not list or type(keys) is not list or len(groups) != len(keys):
            raise ValueError("groups")
        out: dict[int, list[int]] = {g: [] for g in self.tracked}
        for g, h in zip(groups, keys):
            if type(g) is not int or g < 0:
                raise ValueError("groups")
            if (mine := out.get(g)) is not None:
                mine.append(h)
            elif g >= self.n_groups:
                bad_group(g, self.n_groups, "groups")
        return out

    def load(self, ev: dict) -> None:
        self.seen = True
        self.group_keys(ev)   # (only checked: a load's chunks are every group's keys)
        n = len(ev["keys"])
        self.loads += 1
        sync = ev.get("sync")
        self.sync_loads += sync is not None and flag(sync, "sync")
        self.blocks_loaded += count(ev["gpu_blocks"], "gpu_blocks")
        self.jobs[count(ev["job"], "job")] = (False, n)
        self.pinned += n

    def store(self, ev: dict) -> None:
        self.seen = True
        by_group = self.group_keys(ev)
        n = len(ev["keys"])
        if self.gone:
            self.gone.difference_update(by_group[self.ref])
        if self.window is not None:
            self.window.store(by_group)
        self.stores += 1
        self.blocks_stored += count(ev["gpu_blocks"], "gpu_blocks")
        self.jobs[count(ev["job"], "job")] = (True, n)
        self.pending += n
        self.resident += n
        self.max_resident = max(self.max_resident, self.resident)

    def done(self, ev: dict) -> None:
        job = ev["job"]
        got = self.jobs.pop(job, None) if type(job) is int else None
        if got is None:     # (a KeyError named the job's number as the field)
            raise FieldWorded(f"{shown(job)} is no job an offload_load or offload_store line "
                              "created and no offload_done ended yet", "job")
        store, n = got
        if store:
            self.pending -= n
            self.chunks_stored += n
        else:
            self.pinned -= n
            self.chunks_loaded += n

    def evict(self, ev: dict) -> None:
        self.seen = True
        by_group = self.group_keys(ev)
        self.gone.update(by_group[self.ref])
        if self.window is not None:
            self.window.evict(by_group)
        n = len(ev["keys"])
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
        whose chunk the tier evicted too is `evicted_both`, one that the tier's full groups
        held far enough for a hit its windowed groups' chunks stopped is `cpu_window`."""
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
        if self.window is not None and (codes[served:] == EVICTED).any():
            # the missed blocks a hit of the full groups alone would have covered whole (the
            # tier's own hit counts whole blocks the same way); their full-attention chunks are
            # on the CPU, so none of them is `evicted_both`
            upto = min(self.window.reach(ev, hashes, bs) // bs - hit, len(codes))
            if upto > served:
                part = codes[served:upto]
                part[part == EVICTED] = CPU_WINDOW
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
