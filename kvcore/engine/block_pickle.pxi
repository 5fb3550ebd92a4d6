# What both native block hashers (native_hash.pyx, native_ahead.pyx) share: OpenSSL's sha256,
# the pickle bytes of one small int, and the frame of one block's pickle, `pickle.dumps((parent,
# tokens, None), protocol=5)`: PROTO 5, FRAME n, SHORT_BINBYTES parent, MEMOIZE, MARK, the
# tokens, TUPLE, MEMOIZE, NONE, TUPLE3, MEMOIZE, STOP.

cdef extern from "openssl/sha.h":
    ctypedef struct SHA256_CTX:
        pass
    int SHA256_Init(SHA256_CTX *c) nogil
    int SHA256_Update(SHA256_CTX *c, const void *data, size_t n) nogil
    int SHA256_Final(unsigned char *md, SHA256_CTX *c) nogil

DEF PICKLE_HEAD = 11 + 2 + 32 + 2     # PROTO, FRAME n, "C" 32, the parent, MEMOIZE MARK
DEF PICKLE_TAIL = 6                    # TUPLE ... STOP


cdef inline Py_ssize_t put_token(uint8_t *p, long t) noexcept nogil:
    """pickle's opcode for a small int (0 <= t < 2**31) at p: BININT1, BININT2 or BININT."""
    if t < 256:
        p[0] = 0x4B                 # "K"
        p[1] = <uint8_t>t
        return 2
    if t < 65536:
        p[0] = 0x4D                 # "M"
        p[1] = <uint8_t>(t & 0xFF)
        p[2] = <uint8_t>(t >> 8)
        return 3
    p[0] = 0x4A                     # "J"
    p[1] = <uint8_t>(t & 0xFF)
    p[2] = <uint8_t>((t >> 8) & 0xFF)
    p[3] = <uint8_t>((t >> 16) & 0xFF)
    p[4] = <uint8_t>((t >> 24) & 0xFF)
    return 5


cdef inline void start_pickle(uint8_t *buf, const uint8_t *parent) noexcept nogil:
    """The head of a block's pickle, up to its first token (PICKLE_HEAD bytes)."""
    buf[0] = 0x80
    buf[1] = 5
    buf[2] = 0x95
    buf[11] = 0x43                  # SHORT_BINBYTES, 32 bytes
    buf[12] = 32
    memcpy(buf + 13, parent, 32)
    buf[45] = 0x94
    buf[46] = 0x28


cdef inline void hash_pickle(uint8_t *buf, Py_ssize_t n, uint8_t *dst) noexcept nogil:
    """``buf[:n]``: a block's pickle up to its last token. Ends it, sets its frame size, puts its
    sha256 at ``dst`` and makes that the parent of the next block's pickle in ``buf``."""
    cdef SHA256_CTX ctx
    cdef Py_ssize_t x, frame
    buf[n] = 0x74                   # TUPLE
    buf[n + 1] = 0x94               # MEMOIZE
    buf[n + 2] = 0x4E               # NONE
    buf[n + 3] = 0x87               # TUPLE3
    buf[n + 4] = 0x94               # MEMOIZE
    buf[n + 5] = 0x2E               # STOP
    n += PICKLE_TAIL
    frame = n - 11
    for x in range(8):
        buf[3 + x] = <uint8_t>((frame >> (8 * x)) & 0xFF)
    SHA256_Init(&ctx)
    SHA256_Update(&ctx, buf, n)
    SHA256_Final(dst, &ctx)
    memcpy(buf + 13, dst, 32)
