# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A token-id trace line's prompt ids read in C (compiled build; `kvcore.traces.fast_ids`).

orjson makes a Python int per token id, and the reader then copies the list into an
`array("Q")` and checks it for bools: on `benchmarks/sched_vs_vllm.py`'s 2.7 M prompt tokens that
was about a fifth of the whole process's instructions. `parse_ids` reads the digits of one JSON
list straight into an `array("Q")`, and takes only what it can read exactly: non-negative
integers below 2**64, written as JSON writes them. Anything else (an empty list, a sign, a
fraction, an exponent, a leading zero, a bool, a string, more ids than the caller's limit) is
left to the JSON path, which reads it, or names what is wrong with it, as it always did.
Built by `make compiled` (`kvcore.compiled.NATIVE`); without a fresh build the reader keeps to
its JSON path.
"""

from cpython.array cimport array, clone
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

cdef extern from "Python.h":
    int PyUnicode_KIND(object o)
    void *PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    int PyUnicode_1BYTE_KIND

cdef array _TEMPLATE = array("Q")
cdef uint64_t _CUTOFF = 1844674407370955161ULL     # (2**64 - 1) // 10


cdef inline Py_ssize_t _skip_ws(const unsigned char *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    while i < n and (s[i] == 32 or s[i] == 9 or s[i] == 10 or s[i] == 13):
        i += 1
    return i


cdef int _scan(const unsigned char *s, Py_ssize_t n, Py_ssize_t *pos, uint64_t *buf,
               Py_ssize_t cap, Py_ssize_t *count) noexcept nogil:
    """Read ids from ``s[pos:]`` into ``buf`` after the ``count`` it holds (room for ``cap``), up
    to the list's "]". 0: done, ``pos`` just after the "]"; -1: not a list `parse_ids` takes;
    1: ``buf`` is full, ``pos`` at the next id. (A function of its own over local variables:
    the same loop in `parse_ids`'s body, with its `try`, was a third slower.)"""
    cdef Py_ssize_t i = pos[0], k = count[0], start
    cdef uint64_t value, d
    cdef unsigned char c
    while True:
        if i >= n:
            return -1
        c = s[i]
        if c < 48 or c > 57:
            return -1
        if c == 48 and i + 1 < n and 48 <= s[i + 1] <= 57:
            return -1                                      # a leading zero: not JSON
        if k == cap:
            pos[0] = i
            count[0] = k
            return 1
        # 19 digits always fit in 64 bits: only a 20th needs the overflow test. The string's
        # data ends with a NUL (CPython's guarantee), which stops the digits without a bound.
        value = c - 48
        start = i
        i += 1
        c = s[i]
        while 48 <= c <= 57:
            d = c - 48
            if i - start == 19:
                if value > _CUTOFF or (value == _CUTOFF and d > 5):
                    return -1                              # 2**64 or more
                if 48 <= s[i + 1] <= 57:
                    return -1                              # 21 digits
            value = value * 10 + d
            i += 1
            c = s[i]
        if i >= n:
            return -1
        buf[k] = value
        k += 1
        i = _skip_ws(s, i, n)
        if i >= n:
            return -1
        c = s[i]
        if c == 44:                                        # ","
            i = _skip_ws(s, i + 1, n)
            continue
        if c != 93:                                        # ".", "e", anything but "]"
            return -1
        pos[0] = i + 1
        count[0] = k
        return 0


def parse_ids(str line, Py_ssize_t pos, Py_ssize_t limit):
    """The integers of the JSON list whose `[` is just before ``pos`` in ``line``, as
    ``(array("Q"), the index just after its "]")``; None where the list is anything else (see
    the module docstring), holds more than ``limit`` ids, or the line is not one byte a
    character (Latin-1: a JSON line's structure and digits always are)."""
    if PyUnicode_KIND(line) != PyUnicode_1BYTE_KIND:
        return None
    cdef const unsigned char *s = <const unsigned char *>PyUnicode_DATA(line)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(line)
    cdef Py_ssize_t i, count = 0, cap = 1024
    cdef int got
    cdef uint64_t *buf
    cdef uint64_t *grown
    if pos < 1 or pos > n or s[pos - 1] != 91 or limit < 1:      # "["
        return None
    i = _skip_ws(s, pos, n)
    if i >= n or s[i] == 93:                               # "]": empty (the JSON path refuses it)
        return None
    cap = min(cap, limit)
    buf = <uint64_t *>malloc(cap * sizeof(uint64_t))
    if buf == NULL:
        raise MemoryError()
    try:
        while True:
            got = _scan(s, n, &i, buf, cap, &count)
            if got != 1:
                break
            if cap >= limit:
                return None                                # one id more than the limit
            cap = min(cap * 2, limit)
            grown = <uint64_t *>realloc(buf, cap * sizeof(uint64_t))
            if grown == NULL:
                raise MemoryError()
            buf = grown
        if got != 0:
            return None
        out = clone(_TEMPLATE, count, False)
        memcpy(out.data.as_voidptr, buf, count * sizeof(uint64_t))
        return out, i
    finally:
        free(buf)
