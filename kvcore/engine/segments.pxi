# A numbered line in pieces (the ``SEGS`` record of `native_pipe.pyx`): an `admit` line's prompt
# hashes and first tokens, hundreds of values a request, had their digits written on the
# replay's thread (2% of it on the conversation trace, and the copies of that text); now the
# replay's thread copies the values and the line thread writes the digits. Included by
# native_pipe.pyx (before pipe_format.pxi, which formats it).
#
# The line comes from orjson with a mark where each list goes (`segment_mark`: the byte 0x01,
# then "0" + the list's index; orjson writes a control byte inside a string escaped, so a raw
# 0x01 is always a mark), and its lists as `parts`:
#   ("h", hashes, count): the first ``count`` block hashes, as their 64-bit event form;
#   ("s", ids, tb, end, step): a hash-id prompt's tokens at 0, step, ... < end, the token at p
#   being ids[p // tb] * tb + p % tb (as `native_lines.stride_json`).
# The record: u32 length, then pieces, each a u8 type (`SEG_TEXT`, `SEG_HASHES`, `SEG_INTS`),
# a u32 length or count, and the bytes or the 8-byte values.

cdef enum:
    SEG_TEXT = 0
    SEG_HASHES = 1      # unsigned, as the 64-bit event form
    SEG_INTS = 2        # signed
    MAX_PARTS = 64


def segment_mark(Py_ssize_t k):
    """The bytes that stand for ``parts[k]`` in a line (an `orjson.Fragment`'s)."""
    if not 0 <= k < MAX_PARTS:
        raise ValueError(f"a line has at most {MAX_PARTS} lists in pieces")
    return b"\x01" + bytes([0x30 + k])


def stride_count(list ids, Py_ssize_t tb, Py_ssize_t end, Py_ssize_t step):
    """How many tokens a ``("s", ids, tb, end, step)`` part has, or -1 where it cannot be one
    (tb or step not positive, a position past the ids, an id that is not an int or whose
    tokens leave int64): `AdmitFields` then writes the list itself."""
    cdef Py_ssize_t n
    cdef long long limit
    if tb <= 0 or step <= 0:
        return -1
    n = (end + step - 1) // step if end > 0 else 0
    if n and (n - 1) * step // tb >= len(ids):
        return -1
    limit = (<long long>0x7FFFFFFFFFFFFFFF - tb) // tb
    for hid in ids:
        if type(hid) is not int or not -limit <= hid <= limit:
            return -1
    return n


cdef Py_ssize_t part_count(object part) except -1:
    """How many values ``part`` has (checking it as `put_part` will read it)."""
    cdef Py_ssize_t n
    if part[0] == "h":
        if not isinstance(part[1], list) or not 0 <= part[2] <= len(part[1]):
            raise ValueError("a hashes part: (\"h\", list, count <= its length)")
        return part[2]
    if part[0] != "s" or not isinstance(part[1], list):
        raise ValueError("a part is (\"h\", hashes, count) or (\"s\", ids, tb, end, step)")
    n = stride_count(part[1], part[2], part[3], part[4])
    if n < 0:
        raise ValueError("a tokens part reads past its ids, or is not one (`stride_count`)")
    return n


cdef uint8_t *put_part(uint8_t *p, object part, Py_ssize_t n) except NULL:
    """The part's values at ``p`` (checked by `part_count`); past them."""
    cdef Py_ssize_t k, pos, tb, step
    cdef list lst = part[1]
    cdef object item
    cdef uint64_t w
    cdef int64_t v
    if part[0] == "h":
        for k in range(n):
            item = <object>PyList_GET_ITEM(lst, k)
            if not PyBytes_Check(item):
                raise TypeError(f"a block hash is bytes, not {type(item).__name__}")
            w = hash_word(<const uint8_t *>PyBytes_AS_STRING(item), PyBytes_GET_SIZE(item))
            memcpy(p + 8 * k, &w, 8)
        return p + 8 * n
    tb, step = part[2], part[4]
    for k in range(n):
        pos = k * step
        v = <int64_t>PyLong_AsLongLong(<object>PyList_GET_ITEM(lst, pos // tb)) * tb + pos % tb
        memcpy(p + 8 * k, &v, 8)
    return p + 8 * n


cdef int put_segments(Records rec, bytes line, list parts) except -1:
    """Append ``line`` (numbered by the formatter) as a ``SEGS`` record: its text between marks,
    the lists in their places. `rec.n` moves only once it is whole."""
    cdef const uint8_t *s = <const uint8_t *>PyBytes_AS_STRING(line)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(line), i, start, total = 5, k
    cdef Py_ssize_t n_parts = len(parts)
    cdef list counts = [part_count(part) for part in parts]
    cdef uint32_t u32
    cdef uint8_t *p
    if size < 2 or s[0] != b"{":
        raise ValueError("a line in pieces is a JSON object")
    i = 0
    while i < size:                     # the room: every text piece, every list's values
        if s[i] == 1:
            if i + 1 >= size or not 0 <= s[i + 1] - 0x30 < n_parts:
                raise ValueError("a line marks a list it was not given")
            total += 10 + 8 * <Py_ssize_t>counts[s[i + 1] - 0x30]
            i += 1                      # (the mark's index byte)
        i += 1
    total += 5 + size                   # (the text: its bytes, a 5-byte head a piece)
    p = rec.room(total)
    p[0] = SEGS
    p += 5
    start = 0
    i = 0
    while i <= size:
        if i == size or s[i] == 1:
            p[0] = SEG_TEXT
            u32 = <uint32_t>(i - start)
            memcpy(p + 1, &u32, 4)
            memcpy(p + 5, s + start, i - start)
            p += 5 + (i - start)
            if i == size:
                break
            k = s[i + 1] - 0x30
            p[0] = SEG_HASHES if parts[k][0] == "h" else SEG_INTS
            u32 = <uint32_t>counts[k]
            memcpy(p + 1, &u32, 4)
            p = put_part(p + 5, parts[k], counts[k])
            i += 2
            start = i
            continue
        i += 1
    u32 = <uint32_t>(p - (rec.buf + rec.n) - 5)
    memcpy(rec.buf + rec.n + 1, &u32, 4)
    rec.n = p - rec.buf
    return 0
