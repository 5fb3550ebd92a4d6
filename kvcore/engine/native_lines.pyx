# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The native part of our event lines: block hashes as the JSON list of their 64-bit forms.

Every `cache`, `touch` and `evict` line lists the hashes of its blocks as `kv_events.hash_to_int`
gives them (the last 8 bytes, big-endian; a shorter hash whole). The Python path makes an int
(or a numpy array) of each and has orjson write it; here the digits are written straight from
the bytes into the line's text, the same text (tests compare). Built by `make compiled`
(`kvcore.compiled.NATIVE`); without a fresh build `hash_json.hashes_json` keeps to Python.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_FromStringAndSize
from cpython.bytes cimport PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from libc.stdint cimport uint8_t, uint64_t


include "digits.pxi"


def hashes_json(list hashes):
    """`orjson.dumps([hash_to_int(h) for h in hashes])`: e.g. b"[1,2]" (bytes items only)."""
    cdef Py_ssize_t n = PyList_GET_SIZE(hashes), i, size, pos = 1
    cdef object h
    cdef uint64_t v
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 21 * n + 2)   # room for the longest
    cdef char *buf = PyBytes_AS_STRING(out)
    buf[0] = b"["
    for i in range(n):
        h = <object>PyList_GET_ITEM(hashes, i)
        if not PyBytes_Check(h):
            raise TypeError(f"a block hash is bytes, not {type(h).__name__}")
        size = PyBytes_GET_SIZE(h)
        v = hash_word(<const uint8_t *>PyBytes_AS_STRING(h), size)
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
