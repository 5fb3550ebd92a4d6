# `Pump`: the line thread's whole loop without the interpreter's lock, for an output it may write
# by its file descriptor (`line_thread.py`'s `PumpLines`). Included by native_pipe.pyx.
#
# The queue of chunks in Python (`queue.Queue`, `out.write`, the writer thread's `os.write`)
# needed the interpreter's lock five times a chunk on the two helper threads: each time the
# replay's thread was made to drop it (1,800 forced switches over the conversation trace, 2.8%
# of its time in `drop_gil` and a second asleep waiting to take it back), and each chunk's text
# was copied twice under it. Here the replay's thread hands a chunk over under a mutex; the
# pump formats and writes it with write(2), never taking the interpreter's lock.

from libc.errno cimport EINTR, EIO, errno
from posix.unistd cimport write as posix_write

DEF MAX_DEPTH = 64


cdef class Pump:
    """Chunks of records (`Records.take`) queued by one thread (`put`), formatted in order by
    `fmt` and written to ``fd`` by the thread running `run`; at most ``depth`` queued. After
    a failed write or a formatter error nothing more is written (`failure` says which)."""
    cdef Formatter fmt
    cdef int fd, depth
    cdef list held                        # the queued chunks (their bytes stay alive)
    cdef const uint8_t *ptr[MAX_DEPTH]
    cdef Py_ssize_t size[MAX_DEPTH]
    cdef long long queued, taken          # chunks put, chunks the pump is done with
    cdef int err                          # errno of the first failed write
    cdef int bad                          # the formatter's failure (-1 memory, -2 malformed)
    cdef bint ending, dropping
    cdef bint idle                        # the pump waits for chunks
    cdef int wake_at                      # ... and is woken once this many are queued
    cdef bint ready_mu
    cdef pthread_mutex_t mu
    cdef pthread_cond_t cv

    def __cinit__(self, Formatter fmt, int fd, int depth):
        if not 1 <= depth <= MAX_DEPTH:
            raise ValueError(f"Pump: 1 <= depth <= {MAX_DEPTH}")
        self.fmt, self.fd, self.depth = fmt, fd, depth
        self.wake_at = max(1, depth // 2)
        self.held = [None] * depth
        pthread_mutex_init(&self.mu, NULL)
        pthread_cond_init(&self.cv, NULL)
        self.ready_mu = True

    def __dealloc__(self):
        if self.ready_mu:
            pthread_cond_destroy(&self.cv)
            pthread_mutex_destroy(&self.mu)

    def put(self, bytes chunk):
        """Queue ``chunk`` (waiting, without the interpreter's lock, while ``depth`` are
        queued); False once a write failed (then nothing more is written)."""
        cdef Py_ssize_t slot
        cdef bint ok
        pthread_mutex_lock(&self.mu)
        if self.queued - self.taken >= self.depth and not self._failed():
            with nogil:
                while self.queued - self.taken >= self.depth and not self._failed():
                    pthread_cond_wait(&self.cv, &self.mu)
        ok = not self._failed() and not self.ending
        if ok:
            # the slot's previous chunk is done with (the pump took it): its reference goes
            slot = self.queued % self.depth
            self.held[slot] = chunk
            self.ptr[slot] = <const uint8_t *>PyBytes_AS_STRING(chunk)
            self.size[slot] = PyBytes_GET_SIZE(chunk)
            self.queued += 1
            # A waiting pump is woken once half its depth is queued, not at every chunk: a
            # wake is a futex call and a cross-CPU interrupt, 1.4% of the replay's thread on
            # the first 4,000 conversation requests when it was one a chunk.
            if not self.idle or self.queued - self.taken >= self.wake_at:
                pthread_cond_broadcast(&self.cv)
        pthread_mutex_unlock(&self.mu)
        return ok

    def close(self, bint drop=False):
        """End the pump once every queued chunk is written (``drop``: without writing them)."""
        with nogil:
            pthread_mutex_lock(&self.mu)
            self.ending = True
            self.dropping = self.dropping or drop
            pthread_cond_broadcast(&self.cv)
            pthread_mutex_unlock(&self.mu)

    def failure(self):
        """(errno of the failed write or 0, the formatter's failure or 0)."""
        return self.err, self.bad

    def run(self):
        """The thread's body: until `close`, and every queued chunk done."""
        with nogil:
            self._loop()

    cdef inline bint _failed(self) noexcept nogil:
        return self.err != 0 or self.bad != 0

    cdef void _loop(self) noexcept nogil:
        cdef Py_ssize_t slot
        cdef int status
        cdef bint skip
        cdef const uint8_t *p
        cdef Py_ssize_t n
        pthread_mutex_lock(&self.mu)
        while True:
            while self.taken == self.queued and not self.ending:
                self.idle = True
                pthread_cond_wait(&self.cv, &self.mu)
                self.idle = False
            if self.taken == self.queued:
                break
            slot = self.taken % self.depth
            p, n = self.ptr[slot], self.size[slot]
            skip = self.dropping or self._failed()
            pthread_mutex_unlock(&self.mu)
            status = 0 if skip else self._write_chunk(p, n)
            pthread_mutex_lock(&self.mu)
            if status > 0:
                self.err = status
            elif status < 0:
                self.bad = status
            self.taken += 1
            pthread_cond_broadcast(&self.cv)
        pthread_mutex_unlock(&self.mu)

    cdef int _write_chunk(self, const uint8_t *p, Py_ssize_t size) noexcept nogil:
        """Format and write one chunk: 0, an errno (the write failed), or the formatter's
        failure (< 0)."""
        cdef Py_ssize_t n = self.fmt.run(p, size), done = 0, w
        if n < 0:
            return <int>n
        while done < n:
            w = posix_write(self.fd, self.fmt.out + done, n - done)
            if w < 0:
                if errno == EINTR:
                    continue
                return errno
            if w == 0:
                return EIO
            done += w
        return 0
