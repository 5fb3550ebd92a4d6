# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The native block hasher: chained sha256 over vLLM's pickle bytes, built in C (Cython).

`hash_memo.TraceBlockHasher` hashes a trace block it has not seen as `k` chained sha256 over the
pickle bytes vLLM hashes, `pickle.dumps((parent, tokens, None), 5)`, which it builds directly
(`hash_memo.py` has their layout: a fixed head, the 32-byte parent, `(`, one `J` + int32 LE per
token, a fixed end). Here the bytes are built in one C buffer and hashed with OpenSSL's sha256
functions (the library Python's `hashlib` uses, without its per-call digest fetch and object):
the same bytes, so the same hashes (tests compare them with `BlockHasher`'s). `token_block_hashes`
does the same for any list of small tokens (`BlockHasher.hash_after`: decode blocks, token-id
prompts), pickling each token as pickle does (BININT1, BININT2 or BININT by its size). Built by
`make compiled` beside the mypyc modules (`kvcore.compiled.NATIVE`); without a fresh build the
callers keep to their Python path.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.exc cimport PyErr_Clear
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_AsLong, PyLong_CheckExact
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

include "block_pickle.pxi"

DEF HASH = 32
cdef bytes MID = b"\x94("               # MEMOIZE, MARK
cdef bytes END = b"t\x94N\x87\x94."     # TUPLE, MEMOIZE, NONE, TUPLE3, MEMOIZE, STOP


def trace_block_hashes(bytes head, bytes parent, int64_t base, Py_ssize_t k, Py_ssize_t bs):
    """The `k` chained hashes of the blocks of tokens `base, base+1, ...` (`bs` a block), the
    first chained to `parent`, as one bytes object of `k * 32` bytes. `head` is the pickle's
    head up to the parent (`hash_memo._pickle_head(bs)`); the caller checks that every token
    pickles as BININT (65536 <= token < 2**31) and that `parent` is 32 bytes."""
    cdef Py_ssize_t hlen = PyBytes_GET_SIZE(head)
    cdef Py_ssize_t size = hlen + HASH + 2 + 5 * bs + 6
    cdef Py_ssize_t i, j
    cdef int64_t t = base
    cdef uint8_t *toks
    cdef SHA256_CTX ctx
    if PyBytes_GET_SIZE(parent) != HASH or k < 0 or bs <= 0:
        raise ValueError("trace_block_hashes: a 32-byte parent, k >= 0 and bs > 0")
    if base < 65536 or base + k * bs > (<int64_t>1 << 31):
        raise ValueError("trace_block_hashes: every token must pickle as BININT")
    out = PyBytes_FromStringAndSize(NULL, k * HASH)
    cdef uint8_t *dst = <uint8_t *>PyBytes_AS_STRING(out)
    cdef uint8_t *buf = <uint8_t *>malloc(size)
    if buf == NULL:
        raise MemoryError()
    memcpy(buf, PyBytes_AS_STRING(head), hlen)
    memcpy(buf + hlen, PyBytes_AS_STRING(parent), HASH)
    memcpy(buf + hlen + HASH, PyBytes_AS_STRING(MID), 2)
    memcpy(buf + size - 6, PyBytes_AS_STRING(END), 6)
    toks = buf + hlen + HASH + 2
    with nogil:
        for i in range(k):
            for j in range(bs):
                toks[5 * j] = 0x4A      # BININT: "J" and the token as int32 little-endian
                toks[5 * j + 1] = <uint8_t>(t & 0xFF)
                toks[5 * j + 2] = <uint8_t>((t >> 8) & 0xFF)
                toks[5 * j + 3] = <uint8_t>((t >> 16) & 0xFF)
                toks[5 * j + 4] = <uint8_t>((t >> 24) & 0xFF)
                t += 1
            SHA256_Init(&ctx)
            SHA256_Update(&ctx, buf, size)
            SHA256_Final(dst + i * HASH, &ctx)
            memcpy(buf + hlen, dst + i * HASH, HASH)      # the next block's parent
    free(buf)
    return out


def token_block_hashes(bytes parent, list toks, Py_ssize_t bs):
    """The chained hashes of the ``len(toks) // bs`` full blocks of ``toks`` (the first chained
    to ``parent``, 32 bytes) as one bytes object, or None when a token is not an int in
    0 .. 2**31 - 1 (the caller's Python path pickles it). Needs 4 <= bs < 13,000 (pickle writes
    shorter tuples with other opcodes, and splits a frame past 64 KiB)."""
    cdef Py_ssize_t k = PyList_GET_SIZE(toks) // bs, i, j, n
    cdef uint8_t *buf
    cdef uint8_t *dst
    cdef long *vals
    cdef object o
    cdef long t
    if PyBytes_GET_SIZE(parent) != HASH or bs < 4 or bs >= 13000:
        raise ValueError("token_block_hashes: a 32-byte parent and 4 <= bs < 13,000")
    # The tokens are checked and kept as C values in one pass (the pickling reads those)
    vals = <long *>malloc((k * bs + 1) * sizeof(long))
    if vals == NULL:
        raise MemoryError()
    buf = NULL
    try:
        for i in range(k * bs):
            o = <object>PyList_GET_ITEM(toks, i)
            if not PyLong_CheckExact(o):
                return None
            t = PyLong_AsLong(o)
            if t < 0 or t > 0x7FFFFFFF:  # (2147483648 was a Python int: an object compare a token)
                PyErr_Clear()
                return None
            vals[i] = t
        out = PyBytes_FromStringAndSize(NULL, k * HASH)
        dst = <uint8_t *>PyBytes_AS_STRING(out)
        buf = <uint8_t *>malloc(PICKLE_HEAD + 5 * bs + PICKLE_TAIL)
        if buf == NULL:
            raise MemoryError()
        start_pickle(buf, <uint8_t *>PyBytes_AS_STRING(parent))
        for i in range(k):
            n = PICKLE_HEAD
            for j in range(bs):
                n += put_token(buf + n, vals[i * bs + j])
            hash_pickle(buf, n, dst + i * HASH)
        return out
    finally:
        free(buf)
        free(vals)


def split_hashes(bytes blob, Py_ssize_t k):
    """The ``k`` 32-byte hashes at the start of ``blob``, as a list of bytes objects (the
    Python path slices them one by one)."""
    cdef const char *p = PyBytes_AS_STRING(blob)
    cdef Py_ssize_t i
    if k < 0 or k * HASH > PyBytes_GET_SIZE(blob):
        raise ValueError("split_hashes: the blob is shorter than k hashes")
    out = PyList_New(k)
    for i in range(k):
        h = PyBytes_FromStringAndSize(p + i * HASH, HASH)
        Py_INCREF(h)
        PyList_SET_ITEM(out, i, h)
    return out
