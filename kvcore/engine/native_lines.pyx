# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The native part of our event lines: block hashes as the JSON list of their 64-bit forms.

Every `cache`, `touch` and `evict` line lists the hashes of its blocks as `kv_events.hash_to_int`
gives them (the last 8 bytes, big-endian; a shorter hash whole). The Python path makes an int
(or a numpy array) of each and has orjson write it; here the digits are written straight from
the bytes into the line's text, the same text (tests compare). Built by `make compiled`
(`kvcore.compiled.NATIVE`); without a fresh build `events.hashes_json` keeps to Python.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_FromStringAndSize
from cpython.bytes cimport PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memcpy


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* 8 bytes read as a big-endian unsigned integer: one load (and a byte swap on x86). */
    static inline uint64_t kv_load_be64(const unsigned char *p) {
        uint64_t v;
        memcpy(&v, p, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        v = __builtin_bswap64(v);
    #elif !defined(__BYTE_ORDER__)
        v = 0;
        for (int j = 0; j < 8; j++) v = (v << 8) | p[j];
    #endif
        return v;
    }
    """
    uint64_t kv_load_be64(const uint8_t *p) nogil


# "00" "01" ... "99": two digits a division (a 20-digit hash: 10 divisions, not 20)
cdef char DIGITS[200]
for _i in range(100):
    DIGITS[2 * _i] = <char>(48 + _i // 10)
    DIGITS[2 * _i + 1] = <char>(48 + _i % 10)


cdef inline Py_ssize_t num_digits(uint64_t v) noexcept nogil:
    """How many decimal digits v has. From the top: a hash's 64-bit form has 20 digits 46% of
    the time and 19 digits 49% of the time; ids and tokens are small."""
    if v >= 10000000000000000000ULL:
        return 20
    if v >= 1000000000000000000ULL:
        return 19
    cdef Py_ssize_t n = 1
    cdef uint64_t p = 10
    while v >= p:
        n += 1
        p *= 10
    return n


cdef inline Py_ssize_t put_u64(char *p, uint64_t v) noexcept nogil:
    """The decimal digits of v at p; how many. Written back to front in place, two a division,
    once the length is known (no scratch buffer, no memcpy call). With the one-load read of a
    hash's 8 bytes: 22-30 -> 16-18 ns a hash (1,000 warm hashes in lists of 100, 3 runs each),
    and `hashes_json` ran 1.06 -> 0.82 G instructions over the first 1,500 conversation
    requests (cachegrind)."""
    cdef Py_ssize_t n = num_digits(v), i = n, d
    while v >= 100:
        d = <Py_ssize_t>(v % 100) * 2
        v //= 100
        i -= 2
        p[i] = DIGITS[d]
        p[i + 1] = DIGITS[d + 1]
    if v >= 10:
        p[0] = DIGITS[2 * v]
        p[1] = DIGITS[2 * v + 1]
    else:
        p[0] = <char>(48 + v)
    return n


def hashes_json(list hashes):
    """`orjson.dumps([hash_to_int(h) for h in hashes])`: e.g. b"[1,2]" (bytes items only)."""
    cdef Py_ssize_t n = PyList_GET_SIZE(hashes), i, j, size, pos = 1
    cdef object h
    cdef const uint8_t *b
    cdef uint64_t v
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 21 * n + 2)   # room for the longest
    cdef char *buf = PyBytes_AS_STRING(out)
    buf[0] = b"["
    for i in range(n):
        h = <object>PyList_GET_ITEM(hashes, i)
        if not PyBytes_Check(h):
            raise TypeError(f"a block hash is bytes, not {type(h).__name__}")
        size = PyBytes_GET_SIZE(h)
        b = <const uint8_t *>PyBytes_AS_STRING(h)
        if size >= 8:       # the last 8 bytes
            v = kv_load_be64(b + size - 8)
        else:
            v = 0
            for j in range(size):
                v = (v << 8) | b[j]
        if i:
            buf[pos] = b","
            pos += 1
        pos += put_u64(buf + pos, v)
    buf[pos] = b"]"
    return out[:pos + 1]


def stride_json(list ids, Py_ssize_t tb, Py_ssize_t end, Py_ssize_t step):
    """The JSON of a hash-id prompt's tokens at positions ``0, step, 2*step ... < end``: position
    ``p`` holds ``ids[p // tb] * tb + p % tb`` (`traces.request.HashIdTokens`); `admit` lines'
    `first_tokens` (9M ints on the conversation trace, built and written one by one before).
    None where Python must do it: a position past the ids, a non-int id, or a token outside
    int64."""
    if tb <= 0 or step <= 0:
        return None
    cdef Py_ssize_t n = (end + step - 1) // step if end > 0 else 0
    cdef Py_ssize_t nids = PyList_GET_SIZE(ids), k, p, i, pos = 1, last = -1
    cdef long long hid = 0, v
    cdef long long limit = (<long long>0x7FFFFFFFFFFFFFFF - tb) // tb
    cdef object o
    if n and (n - 1) * step // tb >= nids:
        return None
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 21 * n + 2)
    cdef char *buf = PyBytes_AS_STRING(out)
    buf[0] = b"["
    for k in range(n):
        p = k * step
        i = p // tb
        if i != last:
            o = <object>PyList_GET_ITEM(ids, i)
            if type(o) is not int:
                return None
            try:
                hid = o
            except OverflowError:
                return None
            if hid > limit or hid < -limit:
                return None
            last = i
        v = hid * tb + p % tb
        if k:
            buf[pos] = b","
            pos += 1
        if v < 0:
            buf[pos] = b"-"
            pos += 1
            v = -v
        pos += put_u64(buf + pos, <uint64_t>v)
    buf[pos] = b"]"
    return out[:pos + 1]
