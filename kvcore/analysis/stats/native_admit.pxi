# The native kernel's admissions and its hand-over (native.pyx includes this file).
#
# `reasons` is `attribution.block_reasons` for an admission without a hash domain (the only
# kind the kernel takes: the collector leaves the kernel for the first one with a domain), with
# the block keys of `blockkeys.block_keys` / `remember` made and looked up in C. `state` hands
# the kernel's maps to the Python path, `flush` its pending distribution values.

from libc.stdint cimport int8_t


cdef Py_ssize_t _keys(Kernel kn, list hashes, Py_ssize_t start, object toks) except -2:
    """The hashes into kn.hs; the block keys from ``start`` on into kn.ks and what `seen` holds
    for each into kn.fs (-1: never seen). The number of keys (0 without ``toks``), or -1 when
    it is not the plain case (then the Python path raises, or gives the same answer)."""
    cdef Py_ssize_t i, nt, nf = kn._hashes(hashes)
    cdef uint64_t tok, parent
    if nf < 0 or start < 0 or start > nf:
        return -1
    if toks is None:
        return 0
    if type(toks) is not list:
        return -1
    nt = len(<list>toks)
    if nt != nf and nt != nf + 1:
        return -1
    kn._room(nt + 1)
    for i in range(start, nt):
        if not as_u64((<list>toks)[i], &tok):
            return -1
        parent = kn.hs[i - 1] if i > 0 else 0     # block 0's parent: the root, 0 (no domain)
        kn.ks[i - start] = mix(parent, tok)
    for i in range(nt - start):
        map_prefetch(&kn.seen, kn.ks[i])
    for i in range(nt - start):
        kn.fs[i] = map_get(&kn.seen, kn.ks[i], -1)
    return nt - start


cdef int _remember(Kernel kn, Py_ssize_t start, Py_ssize_t nf, Py_ssize_t nk) except -1:
    """Record the keys not seen before (a key twice keeps its last value, as in Python)."""
    cdef Py_ssize_t i
    for i in range(nk):
        if kn.fs[i] < 0:
            map_put(&kn.seen, kn.ks[i],
                    <int64_t>(kn.hs[start + i] & <uint64_t>FP) if start + i < nf else TAIL)
    return 0


def reasons(Kernel kn, hashes, Py_ssize_t hit, Py_ssize_t tail, toks):
    """(the reason index of each missed full block as int8, the evicting request of each one
    found in the history, in block order), and the admission's block keys remembered; None
    when it is not the plain case (nothing changed)."""
    if type(hashes) is not list:
        return None
    cdef Py_ssize_t j, nf = len(<list>hashes)
    cdef Py_ssize_t nk = _keys(kn, hashes, hit, toks)
    cdef int64_t seen, was
    cdef uint64_t h
    cdef int8_t code
    cdef bint first_cached = False
    if nk < 0:
        return None
    codes = np.empty(nf - hit, dtype=np.int8)
    cdef int8_t[::1] cv = codes
    evictors = []
    for j in range(nf - hit):
        map_prefetch(&kn.cached, kn.hs[hit + j])
        map_prefetch(&kn.evicted, kn.hs[hit + j])
    for j in range(nf - hit):
        h = kn.hs[hit + j]
        code = COLD
        if toks is not None:
            seen = kn.fs[j]
            if seen >= 0 and seen != <int64_t>(h & <uint64_t>FP):
                code = PARTIAL
        if map_find(&kn.cached, h) >= 0:
            code = EVICTED                # cached, not hit: an earlier block was evicted
            first_cached = first_cached or j == 0
        else:
            was = map_get(&kn.evicted, h, -1)
            if was >= 0:
                code = EVICTED
                evictors.append(was & RID_MASK)
        cv[j] = code
    if nf - hit == 1 and tail == 0 and first_cached:   # the last block, all before it hit
        cv[0] = LAST_TOKEN
    _remember(kn, hit, nf, nk)
    return codes, evictors


def remember(Kernel kn, hashes, Py_ssize_t start, toks):
    """`MissStats.remember_admission`'s keys; False when it is not the plain case."""
    if type(hashes) is not list:
        return False
    cdef Py_ssize_t nk = _keys(kn, hashes, start, toks)
    if nk < 0:
        return False
    _remember(kn, start, len(<list>hashes), nk)
    return True


def flush(Kernel kn):
    """Hand the pending distribution values to their `BulkDist`s."""
    for buf in (kn.lifetime, kn.age_at_evict, kn.idle, kn.regret_gap, kn.age_at_hit,
                kn.reuse_gap, kn.reuse_distance):
        (<Buf>buf).flush()


def state(Kernel kn):
    """What the Python path needs to go on: the blocks holding a hash and their hashes, and
    (keys, values) numpy arrays of the held hashes (value: how many blocks hold it), the
    evicted history and the block keys."""
    flush(kn)
    cdef Py_ssize_t b, k = 0
    blocks = np.empty(kn.n, dtype=np.intp)
    hashes = np.empty(kn.n, dtype=np.uint64)
    cdef Py_ssize_t[::1] bv = blocks
    cdef uint64_t[::1] hv = hashes
    for b in range(kn.n):
        if kn.has[b]:
            bv[k] = b
            hv[k] = kn.bhash[b]
            k += 1
    return {"blocks": blocks[:k], "hashes": hashes[:k], "cached": map_items(&kn.cached),
            "evicted": map_items(&kn.evicted), "seen": map_items(&kn.seen)}
