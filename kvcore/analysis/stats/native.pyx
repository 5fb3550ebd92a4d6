# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False
"""The native stats kernel: the per-block and per-hash work of `kvcli stats` in C (Cython).

`Kernel` owns what the Python path keeps in sets, dicts and lists of big ints: the hash each
block holds, the hashes blocks hold (with how many blocks hold each), the evicted history
(`EvictedHashes`) and the block keys seen (`BlockKeys`), as C hash maps of uint64 (native_map.pxi);
it writes the collector's per-block int64 arrays in place. Each method does one event, or the
per-block part of one admission, and says -1 (or None) when the event is not the plain case: a
field not a list, a block index not an int in 0..n-1, a block named twice where that matters, a
hash not an int in 0..2^64-1, a check the reference would fail. All checks come before any
change, so the caller can then hand everything to the Python path (`native_events.py`,
`StatsCollector.leave_native`), which redoes the event and reports what it reports: the pure
path stays the reference, this is only faster (native_events.py has the measurements).
"""

from cpython.exc cimport PyErr_Clear, PyErr_Occurred
from cpython.long cimport PyLong_CheckExact
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, realloc
from libc.string cimport memset

include "native_map.pxi"

cdef extern from "Python.h":
    unsigned long long PyLong_AsUnsignedLongLong(object) noexcept
    Py_ssize_t PyLong_AsSsize_t(object) noexcept

# attribution.py's reason indices, blockkeys.py's values and misses.py's evictor mask
cdef enum:
    COLD = 0
    EVICTED = 1
    PARTIAL = 2
    LAST_TOKEN = 3
cdef int64_t FP = (1 << 62) - 1
cdef int64_t TAIL = 1 << 62
cdef int64_t RID_MASK = 0xFFFFFFFF


cdef inline bint as_u64(object o, uint64_t *out) noexcept:
    """o as uint64 when it is an int in 0..2^64-1 (not a bool: the reference would differ)."""
    cdef unsigned long long v
    if not PyLong_CheckExact(o):
        return False
    v = PyLong_AsUnsignedLongLong(o)
    if v == <unsigned long long>-1 and PyErr_Occurred() != NULL:
        PyErr_Clear()
        return False
    out[0] = v
    return True


cdef inline Py_ssize_t as_block(object o, Py_ssize_t n) noexcept:
    """o as a block index in 0..n-1, or -1."""
    cdef Py_ssize_t b
    if not PyLong_CheckExact(o):
        return -1
    b = PyLong_AsSsize_t(o)
    if b == -1 and PyErr_Occurred() != NULL:
        PyErr_Clear()
        return -1
    return b if 0 <= b < n else -1


cdef inline uint64_t mix(uint64_t parent, uint64_t token) noexcept nogil:
    """blockkeys.mix for one (parent, token) pair (splitmix64's finalizer)."""
    cdef uint64_t k = parent ^ (token * 0x9E3779B97F4A7C15ULL)
    k ^= k >> 30
    k *= 0xBF58476D1CE4E5B9ULL
    k ^= k >> 27
    k *= 0x94D049BB133111EBULL
    k ^= k >> 31
    return k


cdef class Kernel:
    cdef int64_t[::1] ref, alloc_step, cache_step, use_step, use_adm, free_step
    cdef Py_ssize_t n
    cdef uint64_t *bhash              # the hash block b holds, when has[b]
    cdef uint8_t *has
    cdef uint32_t *mark               # mark[b] == stamp: b named before in this event
    cdef uint32_t stamp
    cdef Map cached                   # hash -> blocks holding it (the set and `multi`)
    cdef Map evicted                  # hash -> (step << 32) | evictor (`EvictedHashes`)
    cdef Map seen                     # block key -> value (`BlockKeys`)
    cdef Py_ssize_t *bs               # scratch of one event: blocks, freed blocks, hashes,
    cdef Py_ssize_t *fb               # block keys and what `seen` holds for them
    cdef uint64_t *hs
    cdef uint64_t *ks
    cdef int64_t *fs
    cdef Py_ssize_t cap
    cdef Buf lifetime, age_at_evict, idle, regret_gap, age_at_hit, reuse_gap, reuse_distance

    def __init__(self, c):
        """``c``: the `StatsCollector` (its arrays are written in place, its distributions fed)."""
        self.ref, self.alloc_step, self.cache_step = c.ref, c.alloc_step, c.cache_step
        self.use_step, self.use_adm, self.free_step = c.use_step, c.use_adm, c.free_step
        self.n = len(c.ref)
        self.bhash = <uint64_t *>calloc(self.n, sizeof(uint64_t))
        self.has = <uint8_t *>calloc(self.n, 1)
        self.mark = <uint32_t *>calloc(self.n, sizeof(uint32_t))
        if self.bhash == NULL or self.has == NULL or self.mark == NULL:
            raise MemoryError()
        map_init(&self.cached, 10)
        map_init(&self.evicted, 10)
        map_init(&self.seen, 10)
        self._room(1024)
        e, r = c.ev, c.reuse
        self.lifetime, self.age_at_evict, self.idle = Buf(e.lifetime), Buf(e.age_at_evict), \
            Buf(e.idle)
        self.regret_gap, self.age_at_hit = Buf(e.regret_gap), Buf(r.age_at_hit)
        self.reuse_gap, self.reuse_distance = Buf(r.reuse_gap), Buf(r.reuse_distance)

    def __dealloc__(self):
        free(self.bhash)
        free(self.has)
        free(self.mark)
        free(self.bs)
        free(self.fb)
        free(self.hs)
        free(self.ks)
        free(self.fs)
        map_free(&self.cached)
        map_free(&self.evicted)
        map_free(&self.seen)

    cdef int _room(self, Py_ssize_t k) except -1:
        """Scratch for k entries."""
        if k <= self.cap:
            return 0
        k = max(k, 2 * self.cap)
        self.bs = <Py_ssize_t *>realloc(self.bs, k * sizeof(Py_ssize_t))
        self.fb = <Py_ssize_t *>realloc(self.fb, k * sizeof(Py_ssize_t))
        self.hs = <uint64_t *>realloc(self.hs, k * sizeof(uint64_t))
        self.ks = <uint64_t *>realloc(self.ks, k * sizeof(uint64_t))
        self.fs = <int64_t *>realloc(self.fs, k * sizeof(int64_t))
        if not (self.bs and self.fb and self.hs and self.ks and self.fs):
            raise MemoryError()
        self.cap = k
        return 0

    cdef uint32_t _next(self) noexcept:
        self.stamp += 1
        if self.stamp == 0:                   # wrapped: forget every mark
            memset(self.mark, 0, self.n * sizeof(uint32_t))
            self.stamp = 1
        return self.stamp

    cdef Py_ssize_t _blocks(self, list bl, bint freed, bint distinct) except -2:
        """Convert bl into the scratch `bs` (`fb` when ``freed``): its length, or -1 when an
        entry is no valid index (or, with ``distinct``, a block is named twice)."""
        cdef Py_ssize_t i, b, k = len(bl)
        cdef uint32_t s = self._next()
        self._room(k)
        cdef Py_ssize_t *out = self.fb if freed else self.bs    # (after `_room` moved them)
        for i in range(k):
            b = as_block(bl[i], self.n)
            if b < 0:
                return -1
            if distinct:
                if self.mark[b] == s:
                    return -1
                self.mark[b] = s
            out[i] = b
        return k

    cdef Py_ssize_t _hashes(self, list hl) except -2:
        """Convert hl into the scratch `hs`: its length, or -1 when an entry is no uint64."""
        cdef Py_ssize_t i, k = len(hl)
        self._room(k + 1)
        cdef uint64_t *out = self.hs
        for i in range(k):
            if not as_u64(hl[i], &out[i]):
                return -1
        return k

    # -- the block events: each returns what the caller's counters need, or -1 --------------
    def allocate(self, blocks, int64_t step):
        """The number of blocks."""
        if type(blocks) is not list:
            return -1
        cdef Py_ssize_t i, b, k = self._blocks(blocks, False, True)
        for i in range(k):
            b = self.bs[i]
            if self.has[b] or self.ref[b] != 0:
                return -1
        for i in range(k):
            b = self.bs[i]
            self.ref[b] = 1
            self.alloc_step[b] = step
        return k

    def touch(self, blocks, Py_ssize_t n_hashes, int64_t step, int64_t adm):
        """The blocks whose ref count was 0 (cached, evictable until now)."""
        if type(blocks) is not list:
            return -1
        cdef Py_ssize_t i, b, fresh = 0, k = self._blocks(blocks, False, True)
        if k < 0 or k != n_hashes:
            return -1
        for i in range(k):
            b = self.bs[i]
            if self.ref[b] == 0:
                fresh += 1
            self.ref[b] += 1
            self.age_at_hit.push(step - self.cache_step[b])
            self.reuse_gap.push(step - self.use_step[b])
            self.reuse_distance.push(adm - self.use_adm[b])
            self.use_step[b] = step
            self.use_adm[b] = adm
        return fresh

    cdef Py_ssize_t _pairs(self, blocks, hashes, bint distinct) except -2:
        """A cache or evict event's blocks and hashes into `bs` / `hs` (their count), their
        slots in both maps prefetched; -1 when it is not the plain case."""
        if type(blocks) is not list or type(hashes) is not list:
            return -1
        cdef Py_ssize_t i, k = self._blocks(blocks, False, distinct)
        if k < 0 or self._hashes(hashes) != k:
            return -1
        for i in range(k):
            map_prefetch(&self.cached, self.hs[i])
            map_prefetch(&self.evicted, self.hs[i])
        return k

    def cache(self, blocks, hashes, int64_t step, int64_t adm):
        """The hashes cached again after their eviction (their gaps go to `regret_gap`). A
        block that holds a key, or named twice, takes a further key (vLLM's partial entries):
        not the plain case, left to the Python path (per_block.py), which keeps them all."""
        cdef Py_ssize_t i, j, b, back = 0, k = self._pairs(blocks, hashes, True)
        cdef uint64_t h
        if k < 0:
            return -1
        for i in range(k):
            if self.has[self.bs[i]]:
                return -1
        for i in range(k):
            b, h = self.bs[i], self.hs[i]
            self.bhash[b] = h
            self.has[b] = 1
            self.cache_step[b] = step
            self.use_step[b] = step
            self.use_adm[b] = adm
            j = map_find(&self.cached, h)
            if j >= 0:
                self.cached.slots[j].val += 1
                continue
            map_put(&self.cached, h, 1)
            j = map_find(&self.evicted, h)
            if j >= 0:
                self.regret_gap.push(step - (self.evicted.slots[j].val >> 32))
                map_del(&self.evicted, j)
                back += 1
        return back

    def evict(self, blocks, hashes, int64_t packed, int64_t step):
        """The evicted blocks nobody referenced (their idle times go to `idle`)."""
        cdef Py_ssize_t i, j, b, idle = 0, k = self._pairs(blocks, hashes, True)
        cdef uint64_t h
        if k < 0:
            return -1
        for i in range(k):
            b, h = self.bs[i], self.hs[i]
            if not self.has[b] or self.bhash[b] != h or map_find(&self.cached, h) < 0:
                return -1
        for i in range(k):
            b, h = self.bs[i], self.hs[i]
            self.has[b] = 0
            j = map_find(&self.cached, h)
            if self.cached.slots[j].val > 1:           # another block still holds the hash
                self.cached.slots[j].val -= 1
            else:
                map_del(&self.cached, j)
                map_put(&self.evicted, h, packed)
            self.lifetime.push(step - self.alloc_step[b])
            self.age_at_evict.push(step - self.cache_step[b])
            if self.ref[b] == 0:
                idle += 1
                self.idle.push(step - self.free_step[b])
        return idle

    def free(self, blocks, freed, int64_t step):
        """The freed blocks that hold a hash (now cached and free)."""
        if type(blocks) is not list or type(freed) is not list:
            return -1
        cdef Py_ssize_t i, j, b, cached = 0, k = self._blocks(blocks, False, False)
        cdef Py_ssize_t kf = self._blocks(freed, True, False) if k >= 0 else -1
        if kf < 0:
            return -1
        for i in range(k):                        # a block named twice: once per mention
            self.ref[self.bs[i]] -= 1
        for i in range(kf):
            if self.ref[self.fb[i]] != 0:
                for j in range(k):
                    self.ref[self.bs[j]] += 1     # undo: the reference raises
                return -1
        for i in range(kf):
            b = self.fb[i]
            cached += self.has[b]
            self.free_step[b] = step
        return cached


include "native_admit.pxi"
