# The C containers of the native stats kernel (`native.pyx` includes this file).
#
# `Map`: uint64 -> int64, open addressing with linear probing and backward-shift deletion (no
# tombstones), grown at 3/4 load. 17 bytes a slot, so 23-45 bytes an entry, against ~110 for a
# Python dict entry of a big int, and a lookup is one or two cache misses with no Python object
# made. The slot of a key is the top bits of key * an odd constant (Fibonacci hashing), so
# hand-built streams' small-int hashes spread too.
#
# `Buf`: int64 values of one distribution (`BulkDist`), handed over as one numpy array every
# `FLUSH` values instead of one array per event.

from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport calloc, free, malloc

import numpy as np

cdef uint64_t _FIB = 0x9E3779B97F4A7C15ULL


cdef struct Map:
    uint64_t *keys
    int64_t *vals
    uint8_t *used
    Py_ssize_t size
    Py_ssize_t mask
    int bits


cdef int map_init(Map *m, int bits) except -1:
    cdef Py_ssize_t cap = (<Py_ssize_t>1) << bits
    m.keys = <uint64_t *>malloc(cap * sizeof(uint64_t))
    m.vals = <int64_t *>malloc(cap * sizeof(int64_t))
    m.used = <uint8_t *>calloc(cap, 1)
    if m.keys == NULL or m.vals == NULL or m.used == NULL:
        map_free(m)
        raise MemoryError()
    m.size = 0
    m.mask = cap - 1
    m.bits = bits
    return 0


cdef void map_free(Map *m) noexcept:
    free(m.keys)
    free(m.vals)
    free(m.used)
    m.keys = NULL
    m.vals = NULL
    m.used = NULL


cdef inline Py_ssize_t map_home(const Map *m, uint64_t k) noexcept nogil:
    return <Py_ssize_t>((k * _FIB) >> (64 - m.bits))


cdef inline Py_ssize_t map_find(const Map *m, uint64_t k) noexcept nogil:
    """The slot holding k, or -1."""
    cdef Py_ssize_t i = map_home(m, k)
    while m.used[i]:
        if m.keys[i] == k:
            return i
        i = (i + 1) & m.mask
    return -1


cdef inline int64_t map_get(const Map *m, uint64_t k, int64_t missing) noexcept nogil:
    cdef Py_ssize_t i = map_find(m, k)
    return m.vals[i] if i >= 0 else missing


cdef int map_grow(Map *m) except -1:
    cdef Map old = m[0]
    cdef Py_ssize_t i
    map_init(m, old.bits + 1)
    for i in range(old.mask + 1):
        if old.used[i]:
            map_put(m, old.keys[i], old.vals[i])
    map_free(&old)
    return 0


cdef inline int map_put(Map *m, uint64_t k, int64_t v) except -1:
    """m[k] = v."""
    cdef Py_ssize_t i
    if 4 * (m.size + 1) > 3 * (m.mask + 1):
        map_grow(m)
    i = map_home(m, k)
    while m.used[i]:
        if m.keys[i] == k:
            m.vals[i] = v
            return 0
        i = (i + 1) & m.mask
    m.used[i] = 1
    m.keys[i] = k
    m.vals[i] = v
    m.size += 1
    return 0


cdef void map_del(Map *m, Py_ssize_t i) noexcept nogil:
    """Empty slot i; move later keys of its probe run back so that no lookup stops early."""
    cdef Py_ssize_t j = i, h
    while True:
        j = (j + 1) & m.mask
        if not m.used[j]:
            break
        h = map_home(m, m.keys[j])
        # j's key may move to i when its home is not within (i, j] (cyclically)
        if (h <= i or h > j) if i <= j else (h <= i and h > j):
            m.keys[i] = m.keys[j]
            m.vals[i] = m.vals[j]
            i = j
    m.used[i] = 0
    m.size -= 1


cdef object map_items(const Map *m):
    """(keys as uint64, values as int64) numpy arrays, in slot order."""
    keys = np.empty(m.size, dtype=np.uint64)
    vals = np.empty(m.size, dtype=np.int64)
    cdef uint64_t[::1] kv = keys
    cdef int64_t[::1] vv = vals
    cdef Py_ssize_t i, n = 0
    for i in range(m.mask + 1):
        if m.used[i]:
            kv[n] = m.keys[i]
            vv[n] = m.vals[i]
            n += 1
    return keys, vals


cdef class Buf:
    """Values of one `BulkDist`, added to it an array at a time."""
    cdef int64_t *data
    cdef Py_ssize_t n
    cdef object dist

    FLUSH = 1 << 18

    def __cinit__(self, dist):
        self.data = <int64_t *>malloc((1 << 18) * sizeof(int64_t))
        if self.data == NULL:
            raise MemoryError()
        self.n = 0
        self.dist = dist

    def __dealloc__(self):
        free(self.data)

    cdef inline int push(self, int64_t v) except -1:
        self.data[self.n] = v
        self.n += 1
        if self.n == (1 << 18):
            self.flush()
        return 0

    cdef int flush(self) except -1:
        if self.n:
            self.dist.add_array(np.asarray(<int64_t[:self.n]>self.data).copy())
            self.n = 0
        return 0
