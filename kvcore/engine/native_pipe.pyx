# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Our event lines written on a second thread: the replay's thread appends compact binary
records (`Records`), the line thread turns them into the lines' text (`Formatter`) without the
interpreter's lock, so the digits of a gigabyte of lines (about a third of a conversation replay
with events, measured) run on the other core. Used by `kvcore/engine/line_thread.py`; the text
is the same bytes `JsonlEvents` writes itself (tests compare). Where the output is a file descriptor
the line thread may write itself, `Pump` runs its whole loop without the interpreter's lock.

A record is an op byte and its payload (native byte order; the two ends run in one process):

* ``RAW`` / ``RAW_SEQ``: u32 length, a whole line (``RAW_SEQ``'s lacks its `seq`, which the
  formatter numbers: ``{"step":...`` becomes ``{"seq":N,"step":...``).
* ``HEAD`` / ``REQ``: u32 length, the ``,"step":S,"t_ms":T`` piece / the request's JSON that the
  block lines after it carry.
* ``LISTS``: u8 kind, i64 group, then the kind's lists (`KIND_FIELDS`), each a u32 count and
  that many 8-byte values: block ids as signed, hashes as their 64-bit event form.
* ``SEGS``: u32 length, then a numbered line in pieces (`segments.pxi`): its text with lists
  whose digits the formatter writes (an `admit` line's prompt hashes and first tokens).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_FromStringAndSize
from cpython.bytes cimport PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_AsLongLong
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memmove, strlen


include "digits.pxi"


cdef enum:
    RAW = 1
    RAW_SEQ = 2
    HEAD = 3
    REQ = 4
    LISTS = 5
    SEGS = 6

# The block kinds, as `Records.lists` takes them, and their lists' names in line order.
KINDS = (b"allocate", b"touch", b"cache", b"evict", b"free")
KIND_FIELDS = ((b"blocks",), (b"blocks", b"hashes"), (b"blocks", b"hashes"),
               (b"blocks", b"hashes"), (b"blocks", b"freed", b"evictable"))
cdef const char *KIND_NAME[5]
KIND_NAME[:] = [b"allocate", b"touch", b"cache", b"evict", b"free"]
# the text before each list's values, by kind and list; NULL ends a kind's lists
cdef const char *FIELD_TEXT[5][4]
FIELD_TEXT[0][:] = [b',"blocks":[', NULL, NULL, NULL]
FIELD_TEXT[1][:] = [b',"blocks":[', b'],"hashes":[', NULL, NULL]
FIELD_TEXT[2][:] = [b',"blocks":[', b'],"hashes":[', NULL, NULL]
FIELD_TEXT[3][:] = [b',"blocks":[', b'],"hashes":[', NULL, NULL]
FIELD_TEXT[4][:] = [b',"blocks":[', b'],"freed":[', b'],"evictable":[', NULL]
cdef int NUM_LISTS[5]
NUM_LISTS[:] = [1, 2, 2, 2, 3]


cdef class Records:
    """The replay thread's side: records appended to a growing buffer, taken in chunks."""
    cdef uint8_t *buf
    cdef Py_ssize_t n, cap, hold_at

    def __cinit__(self):
        self.buf = NULL
        self.n = self.cap = 0
        self.hold_at = -1

    def __dealloc__(self):
        free(self.buf)

    cdef uint8_t *room(self, Py_ssize_t extra) except NULL:
        """The buffer's end with room for ``extra`` more bytes (doubling as it grows)."""
        cdef Py_ssize_t cap = self.cap
        cdef uint8_t *grown
        if self.n + extra > cap:
            cap = max(2 * cap, self.n + extra, 1 << 16)
            grown = <uint8_t *>realloc(self.buf, cap)
            if grown == NULL:
                raise MemoryError()
            self.buf, self.cap = grown, cap
        return self.buf + self.n

    cdef int text(self, uint8_t op, bytes line) except -1:
        cdef Py_ssize_t size = PyBytes_GET_SIZE(line)
        cdef uint32_t size32 = <uint32_t>size
        if <Py_ssize_t>size32 != size:          # (a C test: 0xFFFFFFFF would be an object)
            raise ValueError("an event line longer than 4 GiB")
        cdef uint8_t *p = self.room(5 + size)
        p[0] = op
        memcpy(p + 1, &size32, 4)
        memcpy(p + 5, PyBytes_AS_STRING(line), size)
        self.n += 5 + size
        return 0

    def raw(self, bytes line, bint numbered):
        """A whole line (``numbered``: without its `seq`, which the formatter adds)."""
        self.text(RAW_SEQ if numbered else RAW, line)
        return self.n

    def head(self, bytes piece):
        """The ``,"step":S,"t_ms":T`` of the block lines from here on."""
        self.text(HEAD, piece)

    def req(self, bytes req_json):
        """The request (its JSON) of the block lines from here on."""
        self.text(REQ, req_json)

    def lists(self, int kind, long long group, list a, list b=None, list c=None):
        """One block line: its kind (an index of `KINDS`), group and lists (`KIND_FIELDS`:
        block ids as ints; hashes as bytes). Returns the buffer's size."""
        if kind < 0 or kind >= 5:
            raise ValueError(f"no block line kind {kind}")
        cdef int k = NUM_LISTS[kind], i
        cdef list lst
        cdef Py_ssize_t count, j, size = 10
        cdef uint32_t count32
        cdef uint8_t *p
        cdef object item
        cdef int64_t v
        cdef uint64_t w
        cdef tuple parts = (a, b, c)
        cdef bint hashed
        for i in range(k):
            if not isinstance(parts[i], list):
                raise TypeError(f"a {KINDS[kind].decode()} line has {k} lists")
            size += 4 + 8 * PyList_GET_SIZE(<list>parts[i])
        cdef Py_ssize_t start = self.n
        p = self.room(size)
        p[0] = LISTS
        p[1] = <uint8_t>kind
        memcpy(p + 2, &group, 8)
        p += 10
        for i in range(k):
            lst = parts[i]
            count = PyList_GET_SIZE(lst)
            count32 = <uint32_t>count
            memcpy(p, &count32, 4)
            p += 4
            hashed = i == 1 and k == 2
            for j in range(count):
                item = <object>PyList_GET_ITEM(lst, j)
                if hashed:
                    if not PyBytes_Check(item):
                        raise TypeError(f"a block hash is bytes, not {type(item).__name__}")
                    w = hash_word(<const uint8_t *>PyBytes_AS_STRING(item),
                                  PyBytes_GET_SIZE(item))
                    memcpy(p, &w, 8)
                else:
                    v = PyLong_AsLongLong(item)
                    memcpy(p, &v, 8)
                p += 8
        self.n = start + size
        return self.n

    def hold(self):
        """Lines from here on wait for `release` (an admission attempt's block lines follow its
        `admit` line, which is known only after them)."""
        if self.hold_at < 0:
            self.hold_at = self.n

    def release(self, bytes numbered_line=None, list parts=None):
        """End the hold; ``numbered_line`` (a `raw` line without its `seq`) goes before the
        lines held. With ``parts`` its ``\\x01 k`` marks stand for the lists ``parts[k]``
        (`segments.pxi`)."""
        cdef Py_ssize_t at = self.hold_at, size, end = self.n
        cdef uint32_t size32
        cdef uint8_t *p
        if numbered_line is None:
            self.hold_at = -1
            return
        if at < 0:
            at = self.n
        if parts is not None:
            put_segments(self, numbered_line, parts)    # at the end, then moved to `at`
            size = self.n - end
            self.n = end
        else:
            size = 5 + PyBytes_GET_SIZE(numbered_line)
            p = self.room(size)
            size32 = <uint32_t>(size - 5)
            p[0] = RAW_SEQ
            memcpy(p + 1, &size32, 4)
            memcpy(p + 5, PyBytes_AS_STRING(numbered_line), size - 5)
        self.hold_at = -1
        if at < end:                # the record before the lines held: rotate it into place
            self.room(2 * size)
            memcpy(self.buf + end + size, self.buf + end, size)
            p = self.buf + at
            memmove(p + size, p, end - at)
            memcpy(p, self.buf + end + size, size)
        self.n = end + size

    @property
    def holding(self):
        return self.hold_at >= 0

    def __len__(self):
        return self.n

    def take(self):
        """The records so far as bytes (the buffer starts again); never while holding."""
        if self.hold_at >= 0:
            raise RuntimeError("records taken while lines are held")
        out = PyBytes_FromStringAndSize(<char *>self.buf, self.n)
        self.n = 0
        return out


include "segments.pxi"
include "pipe_format.pxi"
include "pthreads.pxi"
include "pipe_pump.pxi"
