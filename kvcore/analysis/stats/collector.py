"""The `kvcli stats` state machine: follow every block through an event stream, fill the sections.

`StatsCollector` keeps per-block state in plain lists sized by the pool (ref count, hash, the
steps of its allocation, caching, last use and last release), per-group counts of cached hashes
and the history of evicted ones (`EvictedHashes`, compact); per-request scalars live in the
`RequestLedger`; never a list per event. Each section gets what it reads in its constructor.
`handlers` maps each event kind to a bound method, so the reader's hot loop is one dict lookup
and one call. `report()` returns the JSON document (documented key by key in docs/stats.md).
"""

from __future__ import annotations

from kvcore.analysis.stats.cpu_tier import CpuTierStats
from kvcore.analysis.stats.dist import Series
from kvcore.analysis.stats.eviction import EvictionStats
from kvcore.analysis.stats.history import EvictedHashes
from kvcore.analysis.stats.memory import MemoryStats
from kvcore.analysis.stats.misses import MissStats
from kvcore.analysis.stats.preemption import PreemptionStats
from kvcore.analysis.stats.report import build_report
from kvcore.analysis.stats.requests import RequestLedger
from kvcore.analysis.stats.reuse import ReuseStats


class StatsCollector:
    def __init__(self, header: dict, *, window_requests: int = 1000,
                 window_ms: float = 60_000.0, top: int = 10) -> None:
        self.header = header
        self.top = top
        bs = header["block_size"]
        n = header["num_blocks"]
        groups = header.get("groups") or [{"type": "full_attention"}]
        self.group_types = [g.get("type", "full_attention") for g in groups]
        self.group_bs = [g.get("block_size") or bs for g in groups]
        self.ref_group = next((i for i, t in enumerate(self.group_types)
                               if t in ("full_attention", "mla")), 0)
        self.swa_groups = [i for i, t in enumerate(self.group_types) if t == "sliding_window"]
        self.cache_mode = header.get("mode") == "cache"
        # per block
        self.ref = [0] * n
        self.bhash: list = [None] * n
        self.alloc_step = [0] * n
        self.cache_step = [0] * n
        self.use_step = [0] * n
        self.use_adm = [0] * n
        self.free_step = [0] * n
        # per group
        ng = len(groups)
        # hash -> blocks holding it (vLLM's map allows one hash on several blocks)
        self.cached: list[dict] = [{} for _ in range(ng)]
        self.evicted = [EvictedHashes() for _ in range(ng)]   # hash -> (step << 32) | evictor
        self.admissions = 0                   # counted admissions so far (reuse distance clock)
        # pool counters
        self.used = 0
        self.cached_free = 0
        self.step = -1                        # no step yet
        self.t_ms = 0.0
        self.step_peak = 0
        self.step_evictions = 0
        self.summary: dict | None = None
        self.interrupted = False
        self.mem = MemoryStats(n - 1, self.group_bs[self.ref_group])
        self.reqs = RequestLedger(self.mem, self.cache_mode)
        self.ev = EvictionStats()
        self.reuse = ReuseStats(window_requests, window_ms, ng)
        self.miss = MissStats(self.cached, self.evicted, self.ref_group,
                              self.group_bs[self.ref_group], self.swa_groups)
        self.pre = PreemptionStats()
        self.cpu = CpuTierStats()
        self.series = Series({"used_max": "max", "used_sum": "sum", "cached_sum": "sum",
                              "evictions": "sum", "prompt_tokens": "sum", "hit_tokens": "sum"})
        self.handlers = {
            "arrive": self.reqs.arrive, "admit": self._admit, "touch": self._touch,
            "allocate": self._allocate, "cache": self._cache, "evict": self._evict,
            "free": self._free, "preempt": self._preempt, "finish": self._finish,
            "reject": self.reqs.reject, "interrupted": self._interrupted, "end": self._end,
            "offload_load": self.cpu.load, "offload_store": self.cpu.store,
            "offload_done": self.cpu.done, "offload_evict": self.cpu.evict,
            "offload_offer_failed": self.cpu.offer_failed,
        }

    # -- steps -------------------------------------------------------------------------------
    def advance(self, step: int, t_ms: float) -> None:
        """Called by the reader before the first event of a new step."""
        if self.step >= 0:
            self._close_step(step, t_ms - self.t_ms)
        if self.miss.maybe_in_flight:
            self.miss.expire(step)
        self.step = step
        self.t_ms = t_ms
        self.step_peak = self.used

    def _close_step(self, step: int, dt_ms: float) -> None:
        """Sample the state the current step ends in; ``step`` is the next one, ``dt_ms`` away."""
        weight = step - self.step if step > self.step else 1
        self.mem.sample(self.used, self.cached_free, weight, dt_ms)
        self.series.add("used_max", self.step, self.step_peak)
        self.series.add_max_range("used_max", self.step + 1, step, self.used)
        end = step if step > self.step else self.step + 1
        self.series.add_sum_range("used_sum", self.step, end, self.used)
        self.series.add_sum_range("cached_sum", self.step, end, self.cached_free)
        if self.step_evictions:
            self.series.add("evictions", self.step, self.step_evictions)
            self.step_evictions = 0

    def feed(self, ev: dict) -> None:
        """One event, for in-process use (the file reader inlines this)."""
        if ev["step"] != self.step:
            self.advance(ev["step"], ev["t_ms"])
        self.handlers[ev["kind"]](ev)

    def _peak(self) -> None:
        if self.used > self.step_peak:
            self.step_peak = self.used
            if self.used > self.mem.peak_used:
                self.mem.peak_used = self.used
                self.mem.peak_step = self.step

    # -- request events (arrive, finish and reject go to the ledger) -----------------------------
    def _admit(self, ev: dict) -> None:
        self.miss.admitted_step[ev["req"]] = self.step
        hit = ev["hit_tokens"]
        prompt = ev["prompt_tokens"]
        if ev.get("resumed"):
            self.pre.resumed += 1
            self.pre.resumed_hit_tokens += hit
            self.pre.resumed_prompt_tokens += prompt
        self.cpu.admit(ev, ev["counted"])
        if not ev["counted"]:
            if not ev.get("resumed"):
                self.miss.remember_admission(ev, hit)
            return
        self.admissions += 1
        self.reuse.admit(prompt, hit, ev["t_ms"])
        self.series.add("prompt_tokens", self.step, prompt)
        self.series.add("hit_tokens", self.step, hit)
        self.miss.attribute(ev, hit)

    def _finish(self, ev: dict) -> None:
        self.miss.admitted_step.pop(ev["req"], None)
        self.reqs.finish(ev)

    def _preempt(self, ev: dict) -> None:
        self.miss.admitted_step.pop(ev["req"], None)
        self.pre.preemptions += 1
        self.pre.recomputed_tokens += ev["num_computed_tokens"]
        self.pre.victims[ev["req"]] += 1

    def _interrupted(self, ev: dict) -> None:
        self.interrupted = True

    def _end(self, ev: dict) -> None:
        self.summary = ev.get("summary")

    # -- block events --------------------------------------------------------------------------
    def _allocate(self, ev: dict) -> None:
        ref, bhash, step = self.ref, self.bhash, self.step
        blocks = ev["blocks"]
        g = ev["group"]
        for b in blocks:
            if ref[b] or bhash[b] is not None:
                raise ValueError(f"block {b} allocated while in use or still cached "
                                 f"(ref count {ref[b]})")
            ref[b] = 1
            self.alloc_step[b] = step
        self.used += len(blocks)
        if g == self.ref_group:
            self.reqs.hold(ev["req"], len(blocks))
        self._peak()

    def _touch(self, ev: dict) -> None:
        ref, step, adm = self.ref, self.step, self.admissions
        g = ev["group"]
        blocks = ev["blocks"]
        hashes = ev["hashes"]
        r = self.reuse
        hits = r.hits[g]
        depth = r.depth[g]
        use_step, use_adm, cache_step = self.use_step, self.use_adm, self.cache_step
        age, gap, dist = r.age_at_hit.counts, r.reuse_gap.counts, r.reuse_distance.counts
        for i, b in enumerate(blocks):
            if ref[b] == 0:
                self.cached_free -= 1
                self.used += 1
            ref[b] += 1
            h = hashes[i]
            hits[h] += 1
            if i > depth.get(h, -1):
                depth[h] = i
            age[step - cache_step[b]] += 1
            gap[step - use_step[b]] += 1
            dist[adm - use_adm[b]] += 1
            use_step[b] = step
            use_adm[b] = adm
        r.touched_blocks += len(blocks)
        if g == self.ref_group:
            self.reqs.hold(ev["req"], len(blocks))
        self._peak()

    def _cache(self, ev: dict) -> None:
        step, adm = self.step, self.admissions
        g = ev["group"]
        hashes = ev["hashes"]
        cached, evicted = self.cached[g], self.evicted[g]
        bs = self.group_bs[g]
        bhash, cache_step, use_step, use_adm = self.bhash, self.cache_step, self.use_step, self.use_adm
        fresh = []                            # hashes no block held: were they evicted before?
        for i, b in enumerate(ev["blocks"]):
            h = hashes[i]
            bhash[b] = h
            cache_step[b] = step
            use_step[b] = step
            use_adm[b] = adm
            n = cached.get(h, 0)
            cached[h] = n + 1
            if not n:
                fresh.append(h)
        if self.miss.maybe_in_flight and g == self.ref_group:
            self.miss.on_cached(hashes, step, ev["req"])
        if fresh:
            back = evicted.pop_many(fresh)
            if back:
                e = self.ev
                e.regret_evictions += len(back)
                e.regret_tokens += bs * len(back)
                gaps = e.regret_gap.counts
                for packed in back:
                    gaps[step - (packed >> 32)] += 1

    def _evict(self, ev: dict) -> None:
        # The hottest handler (one line per evicted block): locals and direct Counter updates.
        step = self.step
        g = ev["group"]
        hashes = ev["hashes"]
        blocks = ev["blocks"]
        req = ev["req"]
        rid = self.reqs.index.get(req)
        if rid is None:
            rid = 0xFFFFFFFF if req is None else self.reqs.rid(req)
        cached = self.cached[g]
        history = self.evicted[g]
        recent = history.recent                  # EvictedHashes.__setitem__, inlined
        packed = (step << 32) | rid
        bhash, ref = self.bhash, self.ref
        alloc_step, cache_step, free_step = self.alloc_step, self.cache_step, self.free_step
        e = self.ev
        lifetime, age, idle = e.lifetime.counts, e.age_at_evict.counts, e.idle.counts
        for b, h in zip(blocks, hashes, strict=True):
            if bhash[b] != h:
                raise ValueError(f"evict of block {b} with hash {h}, which it does not hold")
            bhash[b] = None
            left = cached[h] - 1
            if left:
                cached[h] = left                 # another block still holds the hash
            else:
                del cached[h]
                recent[h] = packed
                if len(recent) >= history.limit:
                    history.merge()
                    recent = history.recent
            lifetime[step - alloc_step[b]] += 1
            age[step - cache_step[b]] += 1
            if ref[b] == 0:
                self.cached_free -= 1
                idle[step - free_step[b]] += 1
            else:
                e.evicted_in_use += 1
        n = len(blocks)
        e.evictions += n
        e.by_req[rid] += n
        self.step_evictions += n

    def _free(self, ev: dict) -> None:
        ref = self.ref
        blocks = ev["blocks"]
        for b in blocks:
            ref[b] -= 1
        step = self.step
        for b in ev["freed"]:
            if ref[b] != 0:
                raise ValueError(f"block {b} listed in 'freed' but its ref count is {ref[b]}")
            self.used -= 1
            if self.bhash[b] is not None:
                self.cached_free += 1
            self.free_step[b] = step
        if ev["group"] == self.ref_group:
            self.reqs.release(ev["req"], len(blocks))

    # -- the report ----------------------------------------------------------------------------
    def finish(self) -> None:
        """Close the last step (call once, after the last event)."""
        if self.step >= 0:
            self._close_step(self.step + 1, 0.0)

    def report(self) -> dict:
        """The JSON document (docs/stats.md)."""
        return build_report(self)
