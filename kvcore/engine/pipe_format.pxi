# `Formatter`: the line thread's side of `native_pipe.pyx`: records to the lines' text, without
# the interpreter's lock. Included by native_pipe.pyx (its record ops and kind tables).


cdef inline Py_ssize_t put_i64(char *p, int64_t v) noexcept nogil:
    """The decimal digits of a signed v at p (a minus sign first); how many bytes."""
    if v < 0:
        p[0] = b"-"
        return 1 + put_u64(p + 1, <uint64_t>0 - <uint64_t>v)
    return put_u64(p, <uint64_t>v)


cdef class Formatter:
    """Turns chunks of records into text, in order; keeps what crosses chunks (the current head
    and request, the next `seq`). One thread uses it at a time."""
    cdef char *out
    cdef Py_ssize_t cap
    cdef char *head_text
    cdef Py_ssize_t head_len
    cdef char *req_text
    cdef Py_ssize_t req_len
    cdef public long long seq

    def __cinit__(self):
        self.out = self.head_text = NULL
        self.cap = self.head_len = 0
        self.req_text = <char *>malloc(4)      # no request yet: null (as `JsonlEvents`)
        if self.req_text == NULL:
            raise MemoryError()
        memcpy(self.req_text, b"null", 4)
        self.req_len = 4
        self.seq = 0

    def __dealloc__(self):
        free(self.out)
        free(self.head_text)
        free(self.req_text)

    def format(self, bytes chunk):
        """The text of ``chunk``'s records (whole records, as `Records.take` gives them)."""
        cdef const uint8_t *p = <const uint8_t *>PyBytes_AS_STRING(chunk)
        cdef Py_ssize_t size = PyBytes_GET_SIZE(chunk), n
        with nogil:
            n = self.run(p, size)
        if n == -1:
            raise MemoryError()
        if n == -2:
            raise ValueError("a malformed chunk of event records")
        return PyBytes_FromStringAndSize(self.out, n)

    cdef int grow(self, Py_ssize_t need) noexcept nogil:
        cdef Py_ssize_t cap = self.cap
        cdef char *grown
        if need <= cap:
            return 0
        cap = max(2 * cap, need, 1 << 20)
        grown = <char *>realloc(self.out, cap)
        if grown == NULL:
            return -1
        self.out, self.cap = grown, cap
        return 0

    cdef Py_ssize_t segments(self, const uint8_t *p, Py_ssize_t size, Py_ssize_t pos
                             ) noexcept nogil:
        """A ``SEGS`` record's line (`segments.pxi`) at ``pos``: where the text ends, or -1 (out
        of memory) or -2 (malformed)."""
        cdef const uint8_t *end = p + size
        cdef const uint8_t *q = p
        cdef Py_ssize_t need = pos + 32, n, j
        cdef uint32_t n32
        cdef uint8_t kind
        cdef uint64_t w
        cdef char *o
        while q < end:                   # the room, and the pieces checked
            if end - q < 5 or q[0] > SEG_INTS:
                return -2
            memcpy(&n32, q + 1, 4)
            n = (n32 if q[0] == SEG_TEXT else 8 * <Py_ssize_t>n32)
            if end - q - 5 < n:
                return -2
            need += (n if q[0] == SEG_TEXT else 2 + 21 * <Py_ssize_t>n32)
            q += 5 + n
        if size < 6 or p[0] != SEG_TEXT or p[5] != b"{":
            return -2
        if self.grow(need) < 0:
            return -1
        o = self.out + pos
        memcpy(o, b'{"seq":', 7)
        o += 7
        o += put_u64(o, <uint64_t>self.seq)
        self.seq += 1
        o[0] = b","
        o += 1
        q = p
        while q < end:
            kind = q[0]
            memcpy(&n32, q + 1, 4)
            q += 5
            if kind == SEG_TEXT:
                j = 1 if q == p + 5 else 0          # (the line's "{", written above)
                memcpy(o, q + j, n32 - j)
                o += n32 - j
                q += n32
                continue
            o[0] = b"["
            o += 1
            for j in range(n32):
                if j:
                    o[0] = b","
                    o += 1
                memcpy(&w, q, 8)
                o += put_u64(o, w) if kind == SEG_HASHES else put_i64(o, <int64_t>w)
                q += 8
            o[0] = b"]"
            o += 1
        return o - self.out

    cdef Py_ssize_t run(self, const uint8_t *p, Py_ssize_t size) noexcept nogil:
        """The text's length in ``self.out``; -1: out of memory; -2: a malformed chunk."""
        cdef const uint8_t *end = p + size
        cdef Py_ssize_t pos = 0, length, need, count, j
        cdef uint32_t len32, count32
        cdef uint8_t op, kind
        cdef int i, lists
        cdef int64_t v
        cdef uint64_t w
        cdef const char *name
        cdef char *o
        cdef char *copy
        cdef const uint8_t *q
        while p < end:
            op = p[0]
            if op == LISTS:
                if end - p < 10:
                    return -2
                kind = p[1]
                if kind >= 5:
                    return -2
                memcpy(&v, p + 2, 8)
                p += 10
                # the longest it can be: the fixed text, the pieces, 21 bytes a value
                need = pos + 96 + self.head_len + self.req_len
                lists = NUM_LISTS[kind]
                q = p
                for i in range(lists):
                    if end - q < 4:
                        return -2
                    memcpy(&count32, q, 4)
                    if end - q - 4 < 8 * <Py_ssize_t>count32:
                        return -2
                    need += 16 + 21 * <Py_ssize_t>count32
                    q += 4 + 8 * <Py_ssize_t>count32
                if self.grow(need) < 0:
                    return -1
                o = self.out + pos
                memcpy(o, b'{"seq":', 7)
                o += 7
                o += put_u64(o, <uint64_t>self.seq)
                self.seq += 1
                memcpy(o, self.head_text, self.head_len)
                o += self.head_len
                memcpy(o, b',"kind":"', 9)
                o += 9
                name = KIND_NAME[kind]
                length = strlen(name)
                memcpy(o, name, length)
                o += length
                memcpy(o, b'","req":', 8)
                o += 8
                memcpy(o, self.req_text, self.req_len)
                o += self.req_len
                memcpy(o, b',"group":', 9)
                o += 9
                o += put_i64(o, v)
                for i in range(lists):
                    name = FIELD_TEXT[kind][i]
                    length = strlen(name)
                    memcpy(o, name, length)
                    o += length
                    memcpy(&count32, p, 4)
                    count = count32
                    p += 4
                    for j in range(count):
                        if j:
                            o[0] = b","
                            o += 1
                        if i == 1 and lists == 2:
                            memcpy(&w, p, 8)
                            o += put_u64(o, w)
                        else:
                            memcpy(&v, p, 8)
                            o += put_i64(o, v)
                        p += 8
                memcpy(o, b"]}\n", 3)
                o += 3
                pos = o - self.out
                continue
            if end - p < 5:
                return -2
            memcpy(&len32, p + 1, 4)
            length = len32
            p += 5
            if end - p < length:
                return -2
            if op == RAW or op == RAW_SEQ:
                if self.grow(pos + length + 32) < 0:
                    return -1
                o = self.out + pos
                if op == RAW_SEQ:
                    if length < 2 or p[0] != b"{":
                        return -2
                    memcpy(o, b'{"seq":', 7)
                    o += 7
                    o += put_u64(o, <uint64_t>self.seq)
                    self.seq += 1
                    o[0] = b","
                    o += 1
                    memcpy(o, p + 1, length - 1)
                    o += length - 1
                else:
                    memcpy(o, p, length)
                    o += length
                pos = o - self.out
            elif op == SEGS:
                pos = self.segments(p, length, pos)
                if pos < 0:
                    return pos
            elif op == HEAD or op == REQ:
                copy = <char *>malloc(length if length else 1)
                if copy == NULL:
                    return -1
                memcpy(copy, p, length)
                if op == HEAD:
                    free(self.head_text)
                    self.head_text, self.head_len = copy, length
                else:
                    free(self.req_text)
                    self.req_text, self.req_len = copy, length
            else:
                return -2
            p += length
        return pos
