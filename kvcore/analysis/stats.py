"""The `kvcli stats` driver: follow every block through an event stream and fill the sections.

`StatsCollector` keeps per-block state in plain lists sized by the pool (ref count, hash, the
steps of its allocation, caching, last use and last release), per-group counts of cached hashes
and the history of evicted ones (`EvictedHashes`, compact), and per-request scalars; never a list
per event. `handlers` maps each
event kind to a bound method, so the reader's hot loop is one dict lookup and one call.
`report()` returns the JSON document (documented key by key in docs/stats.md).
"""

from __future__ import annotations

from kvcore.analysis.stats_dist import Series
from kvcore.analysis.stats_eviction import EvictionStats
from kvcore.analysis.stats_history import EvictedHashes
from kvcore.analysis.stats_memory import MemoryStats
from kvcore.analysis.stats_misses import MissStats, attribute, remember_admission
from kvcore.analysis.stats_preemption import PreemptionStats
from kvcore.analysis.stats_reuse import ReuseStats

STATS_SCHEMA_VERSION = 1


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
        # per request
        self.rid: dict[str, int] = {}
        self.names: list[str] = []
        self.prompt: dict[str, int] = {}
        self.output: dict[str, int] = {}
        self.held0: dict[str, int] = {}       # blocks held in the reference group
        self.last_release: dict[str, int] = {}  # blocks of its last full release
        self.pending_finish: set[str] = set()
        self.requests = 0
        self.rejected = 0
        self.finished = 0
        self.admissions = 0                   # counted admissions so far (reuse distance clock)
        # pool counters
        self.used = 0
        self.cached_free = 0
        self.step = None
        self.t_ms = 0.0
        self.step_peak = 0
        self.step_evictions = 0
        self.summary = None
        self.interrupted = False
        self.mem = MemoryStats(n - 1, self.group_bs[self.ref_group])
        self.ev = EvictionStats()
        self.reuse = ReuseStats(window_requests, window_ms, ng)
        self.miss = MissStats()
        self.miss.domain_content = [set() for _ in range(ng)]
        self.pre = PreemptionStats()
        self.series = Series({"used_max": "max", "used_sum": "sum", "cached_sum": "sum",
                              "evictions": "sum", "prompt_tokens": "sum", "hit_tokens": "sum"})
        self.handlers = {
            "arrive": self._arrive, "admit": self._admit, "touch": self._touch,
            "allocate": self._allocate, "cache": self._cache, "evict": self._evict,
            "free": self._free, "preempt": self._preempt, "finish": self._finish,
            "reject": self._reject, "interrupted": self._interrupted, "end": self._end,
        }

    # -- steps -------------------------------------------------------------------------------
    def advance(self, step: int, t_ms: float) -> None:
        """Called by the reader before the first event of a new step."""
        if self.step is not None:
            weight = step - self.step if step > self.step else 1
            self.mem.sample(self.used, self.cached_free, weight, t_ms - self.t_ms)
            self.series.add("used_max", self.step, self.step_peak)
            self.series.add_max_range("used_max", self.step + 1, step, self.used)
            end = step if step > self.step else self.step + 1
            self.series.add_sum_range("used_sum", self.step, end, self.used)
            self.series.add_sum_range("cached_sum", self.step, end, self.cached_free)
            if self.step_evictions:
                self.series.add("evictions", self.step, self.step_evictions)
                self.step_evictions = 0
        self.step = step
        self.t_ms = t_ms
        self.step_peak = self.used

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

    def _rid(self, req: str) -> int:
        r = self.rid.get(req)
        if r is None:
            r = self.rid[req] = len(self.names)
            self.names.append(req)
        return r

    # -- request events ------------------------------------------------------------------------
    def _arrive(self, ev: dict) -> None:
        req = ev["req"]
        self._rid(req)
        self.requests += 1
        self.prompt[req] = int(ev["prompt_tokens"])
        self.output[req] = int(ev["output_tokens"])

    def _admit(self, ev: dict) -> None:
        hit = ev["hit_tokens"]
        prompt = ev["prompt_tokens"]
        if ev.get("resumed"):
            self.pre.resumed += 1
            self.pre.resumed_hit_tokens += hit
            self.pre.resumed_prompt_tokens += prompt
        if not ev["counted"]:
            if not ev.get("resumed"):
                ref = self.ref_group
                remember_admission(ev, hit, ref, self.group_bs[ref], self.miss)
            return
        self.admissions += 1
        self.reuse.admit(prompt, hit, ev["t_ms"])
        self.series.add("prompt_tokens", self.step, prompt)
        self.series.add("hit_tokens", self.step, hit)
        ref = self.ref_group
        attribute(ev, hit, ref, self.group_bs[ref], self.cached, self.evicted, self.swa_groups,
                  self.miss)

    def _preempt(self, ev: dict) -> None:
        self.pre.preemptions += 1
        self.pre.recomputed_tokens += ev["num_computed_tokens"]
        self.pre.victims[ev["req"]] += 1

    def _finish(self, ev: dict) -> None:
        req = ev["req"]
        self.finished += 1
        self.output[req] = int(ev["output_tokens"])
        if self.held0.get(req, 0) > 0:
            self.pending_finish.add(req)          # its blocks are released after `finish`
        else:
            self._request_end(req, self.last_release.pop(req, 0))

    def _request_end(self, req: str, blocks: int) -> None:
        prompt = self.prompt.pop(req, 0)
        out = self.output.pop(req, 0)
        kv = prompt if self.cache_mode else prompt + out - 1
        self.mem.request_end(blocks, kv)

    def _reject(self, ev: dict) -> None:
        self.rejected += 1
        self.prompt.pop(ev["req"], None)
        self.output.pop(ev["req"], None)

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
            self.held0[ev["req"]] = self.held0.get(ev["req"], 0) + len(blocks)
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
            self.held0[ev["req"]] = self.held0.get(ev["req"], 0) + len(blocks)
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
        rid = self.rid.get(req)
        if rid is None:
            rid = 0xFFFFFFFF if req is None else self._rid(req)
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
            req = ev["req"]
            held = self.held0.get(req, 0)
            left = held - len(blocks)
            if left > 0:
                self.held0[req] = left
                return
            self.held0.pop(req, None)
            if req in self.pending_finish:
                self.pending_finish.discard(req)
                self._request_end(req, held)
            elif self.cache_mode:                 # cache mode: look up, allocate, free; no finish
                self._request_end(req, held)
            else:                                 # preempted, or `finish` comes next
                self.last_release[req] = held

    # -- the report ----------------------------------------------------------------------------
    def finish(self) -> None:
        if self.step is not None:
            self.mem.sample(self.used, self.cached_free, 1, 0.0)
            self.series.add("used_max", self.step, self.step_peak)
            self.series.add_sum_range("used_sum", self.step, self.step + 1, self.used)
            self.series.add_sum_range("cached_sum", self.step, self.step + 1, self.cached_free)
            if self.step_evictions:
                self.series.add("evictions", self.step, self.step_evictions)
                self.step_evictions = 0

    def _name(self, rid: int) -> str | None:
        return self.names[rid] if rid < len(self.names) else None

    def check_summary(self, report: dict) -> dict | None:
        """Compare the totals both report with the replay's own summary (the `end` line)."""
        if not self.summary:
            return None
        mine = {"requests": report["source"]["requests"],
                "hit_tokens": report["reuse"]["hit_tokens"],
                "prompt_tokens": report["reuse"]["prompt_tokens"],
                "evictions": report["eviction"]["evictions"],
                "preemptions": report["preemption"]["preemptions"],
                "peak_usage": report["memory"]["peak_usage"]}
        return {k: {"stats": v, "replay": self.summary.get(k)} for k, v in mine.items()
                if self.summary.get(k) != v}

    def report(self) -> dict:
        s = self.series.to_json()
        s["used_mean"] = self.series.bucket_mean("used_sum")
        s["cached_mean"] = self.series.bucket_mean("cached_sum")
        t = self.t_ms
        out = {
            "schema_version": STATS_SCHEMA_VERSION,
            "source": {"mode": self.header.get("mode"), "block_size": self.header["block_size"],
                       "num_blocks": self.header["num_blocks"], "groups": self.group_types,
                       "trace": self.header.get("trace"), "complete": self.summary is not None,
                       "interrupted": self.interrupted, "steps": (self.step or 0) + 1,
                       "sim_time_ms": t, "requests": self.requests, "rejected": self.rejected,
                       "finished": self.finished},
            "memory": self.mem.to_json(s),
            "eviction": self.ev.to_json(self.requests, t, self.reuse.age_at_hit, self.top, s,
                                        self._name),
            "reuse": self.reuse.to_json(self.top, self.group_bs, s),
            "misses": self.miss.to_json(self.top, self._name),
            "preemption": self.pre.to_json(self.top),
        }
        out["source"]["summary_mismatches"] = self.check_summary(out)
        return out


def stats_from_lines(name: str, header_line: bytes, lines, **options) -> dict:
    """The report of an event stream whose first line has been read already."""
    from kvcore.analysis.events_reader import parse_header, read_stream

    collector = StatsCollector(parse_header(header_line, name), **options)
    read_stream(name, lines, collector)
    collector.finish()
    return collector.report()


class StreamingStats:
    """A callable that takes events one by one (the header first), e.g. from a replay's
    `CallbackEvents`; `report()` at the end."""

    def __init__(self, **options) -> None:
        self.options = options
        self.collector: StatsCollector | None = None

    def __call__(self, ev: dict) -> None:
        if self.collector is None:
            self.collector = StatsCollector(ev, **self.options)
        else:
            self.collector.feed(ev)

    def report(self) -> dict:
        self.collector.finish()
        return self.collector.report()


def stats_from_events(events, **options) -> dict:
    """The report of an in-process event iterable (the header first), e.g. a replay's events."""
    it = iter(events)
    collector = StatsCollector(next(it), **options)
    feed = collector.feed
    for ev in it:
        feed(ev)
    collector.finish()
    return collector.report()
