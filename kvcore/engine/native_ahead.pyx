# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""`HashAhead`: the prompt block hashes of hash-id requests, computed on a second thread
before the requests arrive, without the interpreter's lock (`hash_ahead.py` starts it).

A hash-id prompt's block hashes are a pure function of its trace block ids, the trace's block
size and its length (`kvcore.traces.request`), so they can be computed in arrival order ahead of
the replay: `run` (on its own thread) computes job after job, each the chained sha256 over
vLLM's pickle bytes of every full engine block (as `native_hash.token_block_hashes` builds them),
and `take` (the replay's thread, when the request is built) hands the job's hashes over as a
list of bytes, or None when the job is not there (not eligible, dropped, stopped): the caller
then hashes as it did before. The replay's thread keeps only the bytes objects to make.

Bounds: the thread runs at most `window` jobs past the highest job taken and holds at most
`max_bytes` of hashes not yet taken; a job more than `window` behind the highest taken is
dropped (a request built out of order, e.g. by priority, then hashes on the replay's thread).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy

include "pthreads.pxi"
include "block_pickle.pxi"

cdef extern from *:
    """
    /* A bytes object's hash is siphash13 of its bytes with the process's key: a pure function
       (`_Py_HashBytes`), so the thread computes it too, and `take` stores it in the new object
       (3.11's `ob_shash`, which `hash()` fills on first use) instead of the prefix-cache
       dict's first lookup computing it on the replay's thread. */
    static inline Py_hash_t kv_hash_bytes(const void *p, Py_ssize_t n) {
        return _Py_HashBytes(p, n);
    }
    static inline void kv_set_bytes_hash(PyObject *b, Py_hash_t h) {
    #if PY_VERSION_HEX < 0x030D0000
        ((PyBytesObject *)b)->ob_shash = h;
    #endif
    }
    """
    Py_hash_t kv_hash_bytes(const void *p, Py_ssize_t n) nogil
    void kv_set_bytes_hash(object b, Py_hash_t h)

DEF HASH = 32
DEF SLOT = 40       # a block's hash and, after all k of them, its Python hash (8 bytes)
# a job's state
DEF PENDING = 0     # to compute
DEF READY = 1       # computed (out[j]: its hashes; NULL when it has no full block)
DEF GONE = 2        # taken, dropped, not eligible or failed: `take` answers None


cdef class HashAhead:
    cdef int64_t *ids           # the jobs' trace block ids, one job after another
    cdef int64_t *first         # job j's ids are ids[first[j] : first[j + 1]]
    cdef int64_t *blocks        # job j's full engine blocks
    cdef int64_t *tbs           # job j's trace block size
    cdef int32_t *job_of        # a trace request's index -> its job (-1: none)
    cdef uint8_t **out
    cdef uint8_t *state
    cdef Py_ssize_t n_jobs, n_index, bs, window, max_bytes, held
    cdef Py_ssize_t slack       # an idle thread is woken once it may run this many jobs
    cdef Py_ssize_t next_job    # the thread's next job
    cdef Py_ssize_t hi          # one past the highest job taken
    cdef Py_ssize_t lo          # every job below it is GONE
    cdef bint stop, ready_mu
    cdef bint idle              # the thread waits for a take (far enough ahead)
    cdef Py_ssize_t waiting     # the job a take waits for (-1: none)
    cdef uint8_t parent0[HASH]
    cdef pthread_mutex_t mu
    cdef pthread_cond_t cv

    def __cinit__(self, bytes none_hash, Py_ssize_t bs, list jobs, Py_ssize_t n_index,
                  Py_ssize_t window, Py_ssize_t max_bytes):
        """`jobs`, in the order the requests will be built: (trace index, trace block ids,
        trace block size, prompt tokens), or (trace index, None, 0, 0) for a request not hashed
        here. The caller checked eligibility: no extra keys, the trace block size a multiple of
        `bs`, every token 0 <= t < 2**31; 4 <= bs < 13,000 (one pickle frame, `TUPLE` opcodes)."""
        cdef Py_ssize_t j, i, n = len(jobs), total = 0
        if PyBytes_GET_SIZE(none_hash) != HASH or bs < 4 or bs >= 13000 or window < 1:
            raise ValueError("HashAhead: a 32-byte none hash, 4 <= bs < 13,000, window >= 1")
        for job in jobs:
            if job[1] is not None:
                total += len(job[1])
        self.n_jobs, self.n_index, self.bs = n, n_index, bs
        self.window, self.max_bytes = window, max_bytes
        self.slack = max(1, window // 4)
        self.waiting = -1
        memcpy(self.parent0, PyBytes_AS_STRING(none_hash), HASH)
        self.ids = <int64_t *>malloc((total + 1) * sizeof(int64_t))
        self.first = <int64_t *>malloc((n + 1) * sizeof(int64_t))
        self.blocks = <int64_t *>malloc((n + 1) * sizeof(int64_t))
        self.tbs = <int64_t *>malloc((n + 1) * sizeof(int64_t))
        self.job_of = <int32_t *>malloc((n_index + 1) * sizeof(int32_t))
        self.out = <uint8_t **>calloc(n + 1, sizeof(uint8_t *))
        self.state = <uint8_t *>malloc(n + 1)
        if (self.ids == NULL or self.first == NULL or self.blocks == NULL or self.tbs == NULL
                or self.job_of == NULL or self.out == NULL or self.state == NULL):
            raise MemoryError()
        for i in range(n_index):
            self.job_of[i] = -1
        total = 0
        for j in range(n):
            index, hids, tb, plen = jobs[j]
            self.first[j] = total
            if not 0 <= index < n_index:
                raise ValueError("HashAhead: a trace index out of range")
            self.job_of[index] = <int32_t>j
            if hids is None:
                self.state[j], self.blocks[j], self.tbs[j] = GONE, 0, 1
                continue
            for h in hids:
                self.ids[total] = h
                total += 1
            self.state[j], self.tbs[j] = PENDING, tb
            # as the trace-block table: the prompt's full blocks, as far as the ids go
            self.blocks[j] = min(<int64_t>plen, len(hids) * <int64_t>tb) // bs
        self.first[n] = total
        pthread_mutex_init(&self.mu, NULL)
        pthread_cond_init(&self.cv, NULL)
        self.ready_mu = True

    def __dealloc__(self):
        cdef Py_ssize_t j
        if self.out != NULL:
            for j in range(self.n_jobs):
                free(self.out[j])
        free(self.out)
        free(self.ids)
        free(self.first)
        free(self.blocks)
        free(self.tbs)
        free(self.job_of)
        free(self.state)
        if self.ready_mu:
            pthread_cond_destroy(&self.cv)
            pthread_mutex_destroy(&self.mu)

    def run(self):
        """The thread's body: compute the jobs in order until all are done or `close`."""
        with nogil:
            self._loop()

    def close(self):
        """Stop the thread at its next job (a `take` waiting then answers None)."""
        with nogil:
            pthread_mutex_lock(&self.mu)
            self.stop = True
            pthread_cond_broadcast(&self.cv)
            pthread_mutex_unlock(&self.mu)

    def take(self, Py_ssize_t index):
        """The prompt hashes of the trace request at `index` (a list of 32-byte bytes), once,
        or None (no job, dropped, stopped). Waits, without the lock, for the thread to reach it."""
        cdef Py_ssize_t j, k, i
        cdef Py_hash_t *py_hashes
        cdef uint8_t st = GONE
        cdef uint8_t *p = NULL
        if index < 0 or index >= self.n_index or self.job_of[index] < 0:
            return None
        j = self.job_of[index]
        k = self.blocks[j]
        # The lock is taken holding the interpreter's (the thread never needs that one, so
        # this cannot deadlock); the interpreter's is let go only to wait for the job: letting
        # it go for every request woke a waiting thread each time (1% of the replay's thread).
        pthread_mutex_lock(&self.mu)
        if j + 1 > self.hi:
            self.hi = j + 1
            self._drop_behind()
            # An idle thread is woken once it may run a quarter of the window (or a quarter of
            # the bytes) again, not at every take: a wake per request (a futex call, and the
            # woken thread then contending for this lock) was 3.9% of the replay's thread.
            if (self.idle and self.next_job + self.slack <= self.hi + self.window
                    and self.held <= self.max_bytes - self.max_bytes // 4):
                pthread_cond_broadcast(&self.cv)
        if self.state[j] == PENDING and not self.stop:
            if self.idle:
                pthread_cond_broadcast(&self.cv)     # the job this take needs is not done
            self.waiting = j
            with nogil:
                while self.state[j] == PENDING and not self.stop:
                    pthread_cond_wait(&self.cv, &self.mu)
            self.waiting = -1
        st = self.state[j]
        if st == READY:
            p = self.out[j]
            self.out[j] = NULL
            self.state[j] = GONE
            self.held -= k * SLOT
        pthread_mutex_unlock(&self.mu)
        if st != READY:
            return None
        py_hashes = <Py_hash_t *>(p + k * HASH)
        try:
            out = PyList_New(k)
            for i in range(k):
                h = PyBytes_FromStringAndSize(<char *>p + i * HASH, HASH)
                kv_set_bytes_hash(h, py_hashes[i])
                Py_INCREF(h)
                PyList_SET_ITEM(out, i, h)
            return out
        finally:
            free(p)

    cdef void _drop_behind(self) noexcept nogil:
        """(lock held) Jobs more than `window` behind the highest taken (`hi - 1`) are GONE."""
        cdef Py_ssize_t j
        while self.lo < self.hi - 1 - self.window:
            j = self.lo
            if self.state[j] == READY:
                free(self.out[j])
                self.out[j] = NULL
                self.held -= self.blocks[j] * SLOT
            self.state[j] = GONE
            self.lo += 1

    cdef void _loop(self) noexcept nogil:
        cdef Py_ssize_t j
        cdef uint8_t *p
        pthread_mutex_lock(&self.mu)
        while not self.stop and self.next_job < self.n_jobs:
            j = self.next_job
            if self.state[j] != PENDING:        # not eligible, or dropped behind
                self.next_job += 1
                continue
            if j >= self.hi + self.window or (self.held > self.max_bytes and j >= self.hi):
                self.idle = True                # far enough ahead: wait for takes
                pthread_cond_wait(&self.cv, &self.mu)
                self.idle = False
                continue
            pthread_mutex_unlock(&self.mu)
            p = self._compute(j)
            pthread_mutex_lock(&self.mu)
            if self.state[j] != PENDING:        # dropped meanwhile
                free(p)
            elif p == NULL and self.blocks[j] > 0:
                self.state[j] = GONE            # out of memory: the replay's thread hashes it
            else:
                self.out[j] = p
                self.state[j] = READY
                self.held += self.blocks[j] * SLOT
            self.next_job += 1
            if self.waiting == j:
                pthread_cond_broadcast(&self.cv)   # a take waits for this job
        self.stop = True                        # (a take past the end answers at once)
        pthread_cond_broadcast(&self.cv)
        pthread_mutex_unlock(&self.mu)

    cdef uint8_t *_compute(self, Py_ssize_t j) noexcept nogil:
        """Job j's hashes, then their Python hashes (blocks[j] x SLOT bytes, malloc'd; NULL when
        none or out of memory): block i holds the tokens ids[b] * tb + o .. + bs - 1 (b, o: its
        trace block and offset), chained through sha256 as `native_hash.token_block_hashes`."""
        cdef Py_ssize_t k = self.blocks[j], bs = self.bs, i, x, n
        cdef int64_t tb = self.tbs[j], pos, t
        cdef const int64_t *hids = self.ids + self.first[j]
        cdef uint8_t *dst
        cdef uint8_t *buf
        cdef Py_hash_t *py_hashes
        if k <= 0:
            return NULL
        dst = <uint8_t *>malloc(k * SLOT)
        buf = <uint8_t *>malloc(PICKLE_HEAD + 5 * bs + PICKLE_TAIL)
        if dst == NULL or buf == NULL:
            free(dst)
            free(buf)
            return NULL
        py_hashes = <Py_hash_t *>(dst + k * HASH)
        start_pickle(buf, self.parent0)
        for i in range(k):
            pos = i * bs
            t = hids[pos // tb] * tb + pos % tb         # (tb is a multiple of bs)
            n = PICKLE_HEAD
            for x in range(bs):
                n += put_token(buf + n, <long>(t + x))
            hash_pickle(buf, n, dst + i * HASH)
            py_hashes[i] = kv_hash_bytes(dst + i * HASH, HASH)
        free(buf)
        return dst
