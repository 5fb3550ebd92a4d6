# The C containers of the native stats kernel (`native.pyx` includes this file).
#
# `Map`: uint64 -> int64 (values >= 0), open addressing with linear probing and backward-shift
# deletion (no tombstones), grown at 3/4 load: 21-43 bytes an entry (a slot is the key and the
# value side by side, 16 bytes), against ~110 for a Python dict entry of a big int, and a lookup
# makes no Python object. (One slot array, and the prefetch of a batch's slots, in place of
# three arrays of keys, values and used flags: one cache miss a lookup instead of up to three,
# but measured no faster on this shared machine: the handlers of the stream's first 500,000
# events took 4.51 s against 4.41 s, medians of 3, inside the noise.) The slot of a key is
# the top bits of key * an odd constant (Fibonacci hashing), so small-int hashes spread too.
#
# `Buf`: int64 values of one distribution (`BulkDist`), handed over as one numpy array every
# `BUF_SIZE` values, not an array (or a list append) per event.

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset

import numpy as np

cdef uint64_t _FIB = 0x9E3779B97F4A7C15ULL
cdef int64_t EMPTY = -1

cdef extern from *:
    void __builtin_prefetch(const void *addr) noexcept nogil


cdef struct Slot:
    uint64_t key
    int64_t val                       # EMPTY: a free slot (the values put are never negative)


cdef struct Map:
    Slot *slots
    Py_ssize_t size
    Py_ssize_t mask
    int bits


cdef int map_init(Map *m, int bits) except -1:
    cdef Py_ssize_t cap = (<Py_ssize_t>1) << bits
    m.slots = <Slot *>malloc(cap * sizeof(Slot))
    if m.slots == NULL:
        raise MemoryError()
    memset(m.slots, 0xFF, cap * sizeof(Slot))     # every val -1: EMPTY
    m.size = 0
    m.mask = cap - 1
    m.bits = bits
    return 0


cdef void map_free(Map *m) noexcept:
    free(m.slots)
    m.slots = NULL


cdef inline Py_ssize_t map_home(const Map *m, uint64_t k) noexcept nogil:
    return <Py_ssize_t>((k * _FIB) >> (64 - m.bits))


cdef inline Py_ssize_t map_find(const Map *m, uint64_t k) noexcept nogil:
    """The slot holding k, or -1."""
    cdef Py_ssize_t i = map_home(m, k)
    while m.slots[i].val != EMPTY:
        if m.slots[i].key == k:
            return i
        i = (i + 1) & m.mask
    return -1


cdef inline int64_t map_get(const Map *m, uint64_t k, int64_t missing) noexcept nogil:
    cdef Py_ssize_t i = map_find(m, k)
    return m.slots[i].val if i >= 0 else missing


cdef inline void map_prefetch(const Map *m, uint64_t k) noexcept nogil:
    """Start loading k's slot (a batch of lookups then waits for its misses together)."""
    __builtin_prefetch(&m.slots[map_home(m, k)])


cdef int map_grow(Map *m) except -1:
    cdef Map old = m[0]
    cdef Py_ssize_t i
    map_init(m, old.bits + 1)
    for i in range(old.mask + 1):
        if old.slots[i].val != EMPTY:
            map_put(m, old.slots[i].key, old.slots[i].val)
    map_free(&old)
    return 0


cdef inline int map_put(Map *m, uint64_t k, int64_t v) except -1:
    """m[k] = v (v >= 0)."""
    cdef Py_ssize_t i
    if 4 * (m.size + 1) > 3 * (m.mask + 1):
        map_grow(m)
    i = map_home(m, k)
    while m.slots[i].val != EMPTY:
        if m.slots[i].key == k:
            m.slots[i].val = v
            return 0
        i = (i + 1) & m.mask
    m.slots[i].key = k
    m.slots[i].val = v
    m.size += 1
    return 0


cdef void map_del(Map *m, Py_ssize_t i) noexcept nogil:
    """Empty slot i; move later keys of its probe run back so that no lookup stops early."""
    cdef Py_ssize_t j = i, h
    while True:
        j = (j + 1) & m.mask
        if m.slots[j].val == EMPTY:
            break
        h = map_home(m, m.slots[j].key)
        # j's key may move to i when its home is not within (i, j] (cyclically)
        if (h <= i or h > j) if i <= j else (h <= i and h > j):
            m.slots[i] = m.slots[j]
            i = j
    m.slots[i].val = EMPTY
    m.size -= 1


cdef object map_items(const Map *m):
    """(keys as uint64, values as int64) numpy arrays, in slot order."""
    keys = np.empty(m.size, dtype=np.uint64)
    vals = np.empty(m.size, dtype=np.int64)
    cdef uint64_t[::1] kv = keys
    cdef int64_t[::1] vv = vals
    cdef Py_ssize_t i, n = 0
    for i in range(m.mask + 1):
        if m.slots[i].val != EMPTY:
            kv[n] = m.slots[i].key
            vv[n] = m.slots[i].val
            n += 1
    return keys, vals


cdef enum:
    BUF_SIZE = 1 << 18                # values a `Buf` hands over at a time (2 MB)


cdef class Buf:
    """Values of one `BulkDist`, added to it an array at a time."""
    cdef int64_t *data
    cdef Py_ssize_t n
    cdef object dist

    def __cinit__(self, dist):
        self.data = <int64_t *>malloc(BUF_SIZE * sizeof(int64_t))
        if self.data == NULL:
            raise MemoryError()
        self.n = 0
        self.dist = dist

    def __dealloc__(self):
        free(self.data)

    cdef inline int push(self, int64_t v) except -1:
        self.data[self.n] = v
        self.n += 1
        if self.n == BUF_SIZE:
            self.flush()
        return 0

    cdef int flush(self) except -1:
        if self.n:
            self.dist.add_array(np.asarray(<int64_t[:self.n]>self.data).copy())
            self.n = 0
        return 0
