"""The `kvcli stats` state machine: follow every block through an event stream, fill the sections.

`StatsCollector` keeps per-block state in arrays sized by the pool (ref count, hash, the steps
of its allocation, caching, last use and last release), per group the hashes blocks hold and
the history of evicted ones (`EvictedHashes`, compact); per-request scalars live in the
`RequestLedger`; never a list per event. The block events are handled in `block_events.py`
(vectorized) and `per_block.py` (the reference, one block at a time), or, when the compiled
build has it, by the native kernel (`native_events.py`, `native.pyx`: the hashes then live in
C until an event it does not take hands them back). Each section gets what
it reads in its constructor. `handlers` maps each event kind to a bound method, so the
reader's hot loop is one dict lookup and one call. `report()` returns the JSON document
(documented key by key in docs/stats.md).
"""

from __future__ import annotations

import math

import numpy as np

from kvcore.analysis.event_fields import FieldWorded
from kvcore.analysis.stats.cpu_tier import CpuTierStats
from kvcore.analysis.stats.dist import Series
from kvcore.analysis.stats.entry_checks import check_admit, count
from kvcore.analysis.stats.eviction import EvictionStats
from kvcore.analysis.stats.hash_units import HashUnits
from kvcore.analysis.stats.history import EvictedHashes
from kvcore.analysis.stats.latency import LatencyStats
from kvcore.analysis.stats.memory import MemoryStats
from kvcore.analysis.stats.misses import MissStats
from kvcore.analysis.stats.native_events import NativeEvents, available
from kvcore.analysis.stats.preemption import PreemptionStats
from kvcore.analysis.stats.report import build_report
from kvcore.analysis.stats.requests import RequestLedger
from kvcore.analysis.stats.reuse import ReuseStats
from kvcore.errors import InputError
from kvcore.host_memory import GiB, check_fits

# What the per-block state costs (six int64 arrays and a list slot, measured with tracemalloc):
# a header's num_blocks is checked against the host's memory before it is allocated (a header
# saying 10^12 raised numpy's MemoryError with a traceback; 10^9 took 56 GB).
STATE_BYTES_PER_BLOCK = 56


class StatsCollector(NativeEvents):
    def __init__(self, header: dict, *, window_requests: int = 1000,
                 window_ms: float = 60_000.0, top: int = 10, per_block: bool = False,
                 native: bool = True, name: str | None = None,
                 watch: str | None = None) -> None:
        """``per_block``: the reference handlers, one block at a time (tests compare them);
        ``native``: the native kernel when it is built and takes the stream (native_events.py);
        ``name``: the stream's file, which a header too large for this machine names;
        ``watch``: a request whose miss reasons are kept apart (`watched.WatchedMisses`)."""
        self.header = header
        self.top = top
        bs = header["block_size"]
        n = header["num_blocks"]
        need = n * STATE_BYTES_PER_BLOCK
        check_fits(need, f"{n:,} blocks need ~{need / GiB:,.1f} GiB of host memory for stats' "
                   f"per-block state ({STATE_BYTES_PER_BLOCK} bytes a block)", field="num_blocks",
                   path=name, line=None if name is None else 1)
        groups = header.get("groups") or [{"type": "full_attention"}]
        self.group_types = [g.get("type", "full_attention") for g in groups]
        self.group_bs = [g.get("block_size") or bs for g in groups]
        self.ref_group = next((i for i, t in enumerate(self.group_types)
                               if t in ("full_attention", "mla")), 0)
        self.swa_groups = [i for i, t in enumerate(self.group_types) if t == "sliding_window"]
        self.cache_mode = header.get("mode") == "cache"
        # per block (per_block.py says why arrays, and why bhash is a list)
        self.ref = np.zeros(n, dtype=np.int64)
        self.bhash = [None] * n
        self.bextra: dict[int, list] = {}     # a block's further keys (per_block.py)
        self.alloc_step = np.zeros(n, dtype=np.int64)
        self.cache_step = np.zeros(n, dtype=np.int64)
        self.use_step = np.zeros(n, dtype=np.int64)
        self.use_adm = np.zeros(n, dtype=np.int64)
        self.free_step = np.zeros(n, dtype=np.int64)
        # per group (an event's `group` is checked against them: per_block.bad_group)
        ng = self.n_groups = len(groups)
        # the hashes blocks hold, and how many more blocks than one hold a hash (vLLM's map
        # allows one hash on several blocks)
        self.cached = [set() for _ in range(ng)]
        self.multi = [{} for _ in range(ng)]
        self.evicted = [EvictedHashes() for _ in range(ng)]   # hash -> (step << 32) | evictor
        self.admissions = 0                   # counted admissions so far (reuse distance clock)
        # pool counters
        self.used = 0
        self.cached_free = 0
        self.step = -1                        # no step yet
        self.t_ms = 0.0
        # the `end` line's time: the replay's `sim_time_s` (the last step's first event may be
        # earlier: arrivals rejected after the last step carry their own times)
        self.end_t_ms: float | None = None
        self.step_peak = 0
        self.step_evictions = 0
        self.summary: dict | None = None
        self.interrupted = False
        self.mem = MemoryStats(n - 1, self.group_bs[self.ref_group])
        self.reqs = RequestLedger(self.mem, self.cache_mode)
        self.ev = EvictionStats()
        self.reuse = ReuseStats(window_requests, window_ms, ng)
        # a replay with a CPU tier says so in its config (docs/offload.md)
        cfg = header.get("config") or {}
        tier = cfg.get("kv_offloading_size") is not None \
            or cfg.get("kv_offloading_size_chunks") is not None
        # a chunk is made of the groups' own block (`offload.options.tier_block_size`: a Mamba
        # hybrid's bumped block, jamba-v0.1's 80 tokens, not --block-size 16), as their hashes
        sizes = set(self.group_bs)
        tier_bs = sizes.pop() if len(sizes) == 1 else bs
        self.cpu = CpuTierStats((cfg.get("offload_block_size") or tier_bs) // tier_bs
                                if tier else 1, self.ref_group, self.group_types,
                                self.group_bs)
        # the misses at the hash block where the reference group's is coarser (hash_units.py)
        ref_bs = self.group_bs[self.ref_group]
        hbs = header.get("hash_block_size")
        if type(hbs) is not int or hbs <= 0 or ref_bs % hbs:
            hbs = ref_bs
        self.miss = MissStats(self.cached, self.evicted, self.ref_group, hbs, self.group_types,
                              self.cpu if tier else None,
                              hashed=cfg.get("enable_prefix_caching") is not False)
        if watch is not None:
            from kvcore.analysis.stats.watched import WatchedMisses

            self.miss.watch = WatchedMisses(watch, hbs)
        self.miss.lookahead = header.get("hash_lookahead") is True
        self.miss.units = HashUnits(self.ref_group, ref_bs // hbs,
                                    [g for g, b in enumerate(self.group_bs) if b == hbs],
                                    math.lcm(*self.group_bs) // hbs)
        self.pre = PreemptionStats()
        self.lat = LatencyStats(header)
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
        if native and not per_block and available() and ng == 1 and not self.swa_groups \
                and not tier:
            self.use_native()
        if per_block:
            self.handlers.update(touch=self._touch_each, allocate=self._allocate_each,
                                 cache=self._cache_each, evict=self._evict_each,
                                 free=self._free_each)

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
        check_admit(ev, self.n_groups)
        self.miss.admitted_step[ev["req"]] = self.step
        hit = ev["hit_tokens"]
        prompt = ev["prompt_tokens"]
        # (an edited stream's hit of 10^6 in a prompt of 1,066 gave a hit rate of 204%; a
        # string prompt a TypeError's words)
        if type(prompt) is not int or prompt < 0:
            raise InputError(f"must be a token count, got {prompt!r:.40}", field="prompt_tokens")
        if type(hit) is not int or not 0 <= hit <= prompt:
            raise InputError(f"must be a token count from 0 to prompt_tokens {prompt}, got "
                             f"{hit!r:.40}", field="hit_tokens")
        if ev.get("resumed"):
            self.pre.resumed += 1
            self.pre.resumed_hit_tokens += hit
            self.pre.resumed_prompt_tokens += prompt
        self.cpu.admit(ev, ev["counted"])
        self.lat.admit(ev)
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
        self.lat.finish(ev)

    def _preempt(self, ev: dict) -> None:
        self.miss.admitted_step.pop(ev["req"], None)
        self.pre.preemptions += 1
        self.pre.recomputed_tokens += count(ev["num_computed_tokens"], "num_computed_tokens")
        self.pre.victims[ev["req"]] += 1

    def _interrupted(self, ev: dict) -> None:
        self.interrupted = True

    def _end(self, ev: dict) -> None:
        # (checked here, where the reader names the line: the report read a summary of 5, or
        # warnings of 5, with an AttributeError's or a TypeError's traceback after the stream)
        summary = ev["summary"]     # (none: the report said the stream was incomplete)
        if not isinstance(summary, dict):
            raise FieldWorded(f"'summary' must be an object, got {summary!r:.40}", "summary")
        warnings = summary.get("warnings")
        if warnings is not None and not (isinstance(warnings, list)
                                         and all(isinstance(w, str) for w in warnings)):
            raise FieldWorded(f"'summary.warnings' must be a list of strings, got "
                              f"{warnings!r:.40}", "summary.warnings")
        self.summary = summary
        self.end_t_ms = float(ev["t_ms"])      # (the reader checked it: every line's t_ms)

    # -- the report ----------------------------------------------------------------------------
    def finish(self) -> None:
        """Close the last step (call once, after the last event); a stream of no request ran
        none (a cluster's idle replica: a header and an `end` at step 0)."""
        if self.step >= 0 and self.reqs.requests:
            self._close_step(self.step + 1, 0.0)

    def report(self) -> dict:
        """The JSON document (docs/stats.md)."""
        self.flush_native()
        return build_report(self)

    def release(self) -> None:
        """Drop what refers back to the collector (the handlers' bound methods, the kernel and
        the sections' hooks into it), so that its state is freed by reference counting as its
        last reference goes, not at the cyclic collector's next full pass: `kvcli stats DIR`
        over 1,000 small replicas held ~680 MB of finished collectors. Feeds nothing after."""
        self.handlers = {}
        self.kernel = self.miss.kernel = self.miss.leave_native = None
