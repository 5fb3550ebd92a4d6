# pickle's opcodes for one small int, shared by the native hashers (native_hash.pyx,
# native_ahead.pyx): the bytes `pickle.dumps` writes for a token in a tuple.

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
