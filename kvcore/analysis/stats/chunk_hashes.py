"""The hashes of a chunk of the stream, all at once, and what each admission of the chunk would
have read from them at its place in the stream.

`HashAsOf` takes one group's `cache` and `evict` hashes and, for the reference group, the
admissions' missed-block hashes as *queries*, all in stream order, and sorts them by hash
(stable: stream order within a hash). Along each hash, a prefix sum of +1 (cache) and -1
(evict) over the count before the chunk (`held`: hash -> blocks holding it) says how many
blocks held it at every item: a query sees "cached" when that is > 0, a `cache` at 0 is fresh
(the reference's set), an `evict` from 1 empties it (the reference's history put). The last
fresh cache or emptying evict before an item says what the history held for the hash there:
the evict's value, nothing (a fresh cache takes it back), or, with neither before it in the
chunk, the history from before the chunk. So each query gets exactly what the reference's set
and history lookups return at its admission, and each fresh cache its regret.

`SeenAsOf` does the same for the partial-block keys (`BlockKeys`): only admissions write them,
and a key keeps the first value written (a key twice in one admission: its last value there).

Both only compute; ``commit`` writes what the chunk leaves into the tables.
"""

from __future__ import annotations

import numpy as np

from kvcore.analysis.stats.chunk_blocks import CACHE, EVICT, _last_set, _runs

QUERY = 6        # an admission's missed-block hash (reference group only)


class HashAsOf:
    def __init__(self, held, history, hsh: np.ndarray, kind: np.ndarray, step: np.ndarray,
                 packed: np.ndarray, qid: np.ndarray, n_queries: int) -> None:
        """``held``: the group's `U64Table` of hash -> blocks holding it; ``history``: its
        `TableHistory`; items in stream order: hash, kind (CACHE, EVICT, QUERY), step, the
        evict value (``(step << 32) | evictor``) and the query number (-1 for an op)."""
        order = np.argsort(hsh, kind="stable")
        hs, ks, ss, pk = hsh[order], kind[order], step[order], packed[order]
        start, first, last = _runs(hs)
        is_c = ks == CACHE
        is_e = ks == EVICT
        delta = is_c.astype(np.int64) - is_e
        inc = np.cumsum(delta)
        base = inc[start] - delta[start]
        held0 = np.maximum(held.get(hs[first]), 0)
        run = np.cumsum(first) - 1
        before = held0[run] + (inc - delta - base)
        self.ok = not (is_e & (before <= 0)).any()
        if not self.ok:
            return
        fresh = is_c & (before == 0)
        empties = is_e & (before == 1)
        p, li = _last_set(fresh | empties, start)
        is_q = ks == QUERY
        need = (p < 0) & (fresh | is_q)
        carried = np.full(len(hs), -1, dtype=np.int64)
        if need.any() and len(history):
            carried[need] = history.get_q(hs[need])
        hist = np.where(p >= 0, np.where(ks[p] == EVICT, pk[p], -1), carried)
        # the queries' answers, by query number
        qs = qid[order][is_q]
        self.in_c = np.zeros(n_queries, dtype=bool)
        self.in_c[qs] = before[is_q] > 0
        self.was = np.full(n_queries, -1, dtype=np.int64)
        self.was[qs] = hist[is_q]
        # regret: fresh caches of a hash the history held
        back = hist[fresh]
        self.gaps = ss[fresh][back >= 0] - (back[back >= 0] >> 32)
        took = fresh & (p < 0) & (carried >= 0)
        self.take_q = hs[took]
        # what the chunk leaves: blocks per hash, history puts (runs that end emptied)
        final = held0 + (inc[last] - base[last])
        lh = hs[last]
        changed = final != held0
        self.held_put = (lh[changed & (final > 0)], final[changed & (final > 0)])
        self.held_gone = lh[changed & (final == 0)]
        ends = li[last]
        put = ends >= 0
        put[put] = ks[ends[put]] == EVICT
        self.hist_put = (lh[put], pk[ends[put]])

    def commit(self, c, g: int, held, history) -> None:
        if len(self.held_gone):
            held.take(self.held_gone)
        if len(self.held_put[0]):
            held.put(*self.held_put)
        if len(self.take_q):
            history.take_q(self.take_q)
        if len(self.hist_put[0]):
            history.put_array(*self.hist_put)
        if len(self.gaps):
            e = c.ev
            e.regret_evictions += len(self.gaps)
            e.regret_tokens += c.group_bs[g] * len(self.gaps)
            e.regret_gap.add_array(self.gaps)


class SeenAsOf:
    def __init__(self, seen, keys: np.ndarray, vals: np.ndarray, adm: np.ndarray) -> None:
        """``seen``: the `TableBlockKeys`; the chunk's block keys in stream order, their values
        and the admission (a number, increasing) each belongs to."""
        order = np.argsort(keys, kind="stable")
        ks, vs, a = keys[order], vals[order], adm[order]
        start, first, last = _runs(ks)
        c0 = seen.get_q(ks[first])
        run = np.cumsum(first) - 1
        a1 = a[start]
        # the first admission with the key writes it: its last value for the key
        _, w = _last_set(a == a1, start)
        wv = vs[w[last]]
        got = np.where(c0[run] >= 0, c0[run], np.where(a > a1, wv[run], -1))
        self.before = np.empty(len(keys), dtype=np.int64)
        self.before[order] = got
        new = c0 < 0
        self.put = (ks[last][new], wv[new])

    def commit(self, seen) -> None:
        if len(self.put[0]):
            seen.put_array(*self.put)
