"""The block events and the admissions' per-block work through the native kernel (`native.pyx`),
when the compiled build has it (`kvcore/compiled.py`: built by `compiled/build.py`, used only
while it matches its sources, never with KVCLI_PURE=1).

The kernel keeps the per-block and per-hash state in C (the hash each block holds, the held
hashes, the evicted history, the block keys); these handlers call it and keep the counters and
sections in Python. It takes only single-group streams without a CPU tier or hash domains,
and only the plain case of each event (touch, cache and evict of group 0: another group goes
to the Python path, which refuses it): on anything else (a field of another type, a hash that
is no uint64, an error to report, an admission under a hash domain) it changes nothing and
says so, and the collector leaves it for good (`leave_native`): the kernel's state goes into
the Python structures and the Python path (`block_events.py`, `attribution.py`) redoes the
event and everything after it. So the pure path stays the reference; the tests compare the two
on random and malformed streams.

Measured on the Mooncake conversation stream (1.05 GB, 1.06 M events; `benchmarks/
stats_speed.py --compiled`, interleaved, medians of 3, a shared and loaded 2-core machine):
the pure path 59.5 s wall (58.5 s CPU, 870 MB peak RSS), this 18.4 s (16.7 s CPU, 409 MB);
the code of 9a158cb took 105 s (104 s CPU) in the same conditions. What is left (py-spy):
orjson's parse ~27%, the kernel ~40% (the admissions' lookups and the evictions' puts, in maps
of millions of hashes), the rest the reader and these handlers' counters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from kvcore.analysis.stats.block_events import BlockEvents
from kvcore.analysis.stats.blockkeys import BlockKeys
from kvcore.analysis.stats.entry_checks import check_hashes
from kvcore.analysis.stats.history import EvictedHashes
from kvcore.analysis.stats.per_block import bad_group

if TYPE_CHECKING:
    from kvcore.analysis.stats.misses import MissStats

native: Any
try:
    from kvcore.analysis.stats import native  # type: ignore[attr-defined, no-redef]
except ImportError:                               # not built, stale, or KVCLI_PURE=1
    native = None

H = TypeVar("H", bound=EvictedHashes)
# what an argument the kernel converts to a C integer raises when it is not one
_NOT_C_INT = (OverflowError, TypeError)


def available() -> bool:
    return native is not None


def _history(store: H, keys, vals) -> H:
    """``store`` with the entries, where the Python path would have put them: in the dict up
    to its limit (the arrays take no hash that is no uint64, and such hashes may come next)."""
    if len(keys):
        store.put_many(keys.tolist(), vals.tolist(), keys)
        if store.full():
            store.merge()
    return store


class NativeEvents(BlockEvents):
    kernel: Any = None
    handlers: dict

    def use_native(self) -> None:
        """Handle the block events (and the admissions' blocks) in the kernel from now on."""
        self.kernel = native.Kernel(self)
        self.miss.kernel = self.kernel
        self.miss.leave_native = self.leave_native
        self.handlers.update(allocate=self._n_allocate, touch=self._n_touch,
                             cache=self._n_cache, evict=self._n_evict, free=self._n_free)

    def leave_native(self) -> None:
        """Hand the kernel's state to the Python structures; the Python handlers from now on."""
        st = native.state(self.kernel)
        self.kernel = self.miss.kernel = None
        bhash = self.bhash
        for b, h in zip(st["blocks"].tolist(), st["hashes"].tolist(), strict=True):
            bhash[b] = h
        keys, counts = st["cached"]
        held = keys.tolist()
        self.cached[0].update(held)
        self.multi[0].update({h: c - 1 for h, c in zip(held, counts.tolist()) if c > 1})
        self.evicted[0] = _history(EvictedHashes(), *st["evicted"])   # (shared with `miss`)
        self.miss.seen = _history(BlockKeys(), *st["seen"])
        self.handlers.update(allocate=self._allocate, touch=self._touch, cache=self._cache,
                             evict=self._evict, free=self._free)

    def flush_native(self) -> None:
        if self.kernel is not None:
            native.flush(self.kernel)

    def _leave(self, ev: dict) -> None:
        self.leave_native()
        self.handlers[ev["kind"]](ev)

    def _n_allocate(self, ev: dict) -> None:
        blocks = ev["blocks"]
        g = ev["group"]
        if type(g) is not int or not 0 <= g < self.n_groups:
            bad_group(g, self.n_groups)
        try:
            n = self.kernel.allocate(blocks, self.step)
        except _NOT_C_INT:
            n = -1
        if n < 0:
            return self._leave(ev)
        self.used += n
        if g == self.ref_group:
            self.reqs.hold(ev["req"], n)
        self._peak()

    def _n_touch(self, ev: dict) -> None:
        g = ev["group"]
        blocks = ev["blocks"]
        hashes = ev["hashes"]
        check_hashes(hashes)
        fresh = -1
        if type(g) is int and g == 0 and type(hashes) is list:
            try:
                fresh = self.kernel.touch(blocks, len(hashes), self.step, self.admissions)
            except _NOT_C_INT:
                pass
        if fresh < 0:
            return self._leave(ev)
        self.cached_free -= fresh
        self.used += fresh
        r = self.reuse
        r.hit_hashes(0, hashes)
        r.touched_blocks += len(hashes)
        if g == self.ref_group:
            self.reqs.hold(ev["req"], len(hashes))
        self._peak()

    def _n_cache(self, ev: dict) -> None:
        g = ev["group"]
        hashes = ev["hashes"]
        check_hashes(hashes)
        blocks = ev["blocks"]
        back = -1
        if type(g) is int and g == 0:
            try:
                back = self.kernel.cache(blocks, hashes, self.step, self.admissions)
            except _NOT_C_INT:
                pass
        if back < 0:
            return self._leave(ev)
        if self.miss.maybe_in_flight and g == self.ref_group:
            self.miss.on_cached(hashes, self.step, ev["req"])
        if back:                                  # regret (their gaps: the kernel's)
            e = self.ev
            e.regret_evictions += back
            e.regret_tokens += self.group_bs[0] * back

    def _n_evict(self, ev: dict) -> None:
        g = ev["group"]
        hashes = ev["hashes"]
        check_hashes(hashes)
        blocks = ev["blocks"]
        rid = self._evictor(ev["req"])
        idle = -1
        if type(g) is int and g == 0:
            try:
                idle = self.kernel.evict(blocks, hashes, (self.step << 32) | rid, self.step)
            except _NOT_C_INT:
                pass
        if idle < 0:
            return self._leave(ev)
        n = len(blocks)
        e = self.ev
        self.cached_free -= idle
        e.evicted_in_use += n - idle
        e.evictions += n
        e.by_req[rid] += n
        self.step_evictions += n

    def _n_free(self, ev: dict) -> None:
        g = ev["group"]
        if type(g) is not int or not 0 <= g < self.n_groups:
            bad_group(g, self.n_groups)
        blocks = ev["blocks"]
        freed: Any = ev.get("freed")              # (missing: the Python path raises)
        try:
            cached = self.kernel.free(blocks, freed, self.step)
        except _NOT_C_INT:
            cached = -1
        if cached < 0:
            return self._leave(ev)
        self.used -= len(freed)
        self.cached_free += cached
        if g == self.ref_group:
            self.reqs.release(ev["req"], len(blocks))


def _tokens(ev: dict, ref: int) -> Any:
    """The admission's first tokens of the reference group: a list, None (none), or False (not
    the plain case)."""
    ft = ev.get("first_tokens")
    if ft is None:
        return None
    if type(ft) is not list:
        return False
    if len(ft) <= ref or ft[ref] is None:
        return None
    return ft[ref] if type(ft[ref]) is list else False


def native_reasons(ms: MissStats, ev: dict, hashes: list, hit: int, tail: int) -> Any:
    """`block_reasons` (plus `remember`) in the kernel: (codes, evictors), or None after leaving
    the kernel (the caller goes on in Python)."""
    toks = _tokens(ev, ms.ref)
    if ev.get("hash_domain") is None and toks is not False:
        try:
            got = native.reasons(ms.kernel, hashes, hit, tail, toks)
        except _NOT_C_INT:
            got = None
        if got is not None:
            return got
    _leave(ms)
    return None


def native_remember(ms: MissStats, ev: dict, hashes: list, start: int) -> bool:
    """`remember_admission`'s keys in the kernel; False after leaving it."""
    toks = _tokens(ev, ms.ref)
    if ev.get("hash_domain") is None and toks is not False:
        try:
            if native.remember(ms.kernel, hashes, start, toks):
                return True
        except _NOT_C_INT:
            pass
    _leave(ms)
    return False


def _leave(ms: MissStats) -> None:
    if ms.leave_native is not None:             # (set with the kernel)
        ms.leave_native()
