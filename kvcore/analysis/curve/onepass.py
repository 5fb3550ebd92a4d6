"""Every LRU capacity in one pass: Mattson's stack algorithm over chained block keys.

With one request at a time, an LRU cache of capacity C holds the C most recently touched keys
(the *stack* inclusion property), so one pass that measures, for each lookup, how many distinct
keys were touched since that key's last touch (its *stack distance* d) gives the hit rate at
every capacity: the block hits at C iff d < C, and its whole prefix hits too.

Touch order. A request looks all its blocks up first, then touches them tail first, so its head
block ends up the most recent, as vLLM's reverse-order free leaves them in the free queue. The
distance of a lookup is therefore taken against the state *before* the request: with touch
positions t, a key last touched at p and a request starting at s, d = #{keys whose last touch
before s lies in (p, s)} = (s - 1 - p) - #{j in (p, s) whose key is touched again before s}.
The second term is a 2-D dominance count, done offline for all lookups at once with numpy, one
sorted array per power of two (no per-block Python loop): O(n log^2 n) in C, no tree in Python.

Exactness (proved by tests against exact per-capacity replays, `tests/test_curve_onepass.py`):

* ``--rule trace``: a plain LRU over keys; exact at every capacity.
* ``--rule vllm`` (the KVCacheManager): between requests every block is free, the unhashed
  partial last block of request r-1 sits at the front of the free queue, so the cache holds
  exactly the top ``C - partial(r-1)`` keys: a lookup hits iff ``d + partial(r-1) < C`` (and
  within the ``N - 1`` cap). This holds while (a) no request is rejected, i.e.
  ``C >= max blocks of a request``, and (b) no request allocates a second block for a key that
  is still cached: that happens only to a block-aligned prompt whose last block (beyond the
  ``N - 1`` cap) is still cached, at capacities ``C > d + partial``. `OnePass.exact_range`
  gives the capacities where both hold; the curve replays the others exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kvcore.analysis.curve.input import CurveInput, stable_order

TABLE_ENTRIES = 1 << 20   # size bound of _count_before's prefix table


@dataclass(slots=True)
class OnePass:
    """The hit curve of LRU at every capacity, as a step function of the capacity."""

    depth_sorted: np.ndarray    # sorted effective distances of the counted blocks that can hit
    cum_hits: np.ndarray        # cum_hits[i] = hit tokens of the i smallest distances
    total_tokens: int           # prompt tokens of the counted requests
    exact_min: int              # smallest capacity at which the one pass is exact
    exact_max: float            # largest (inf when unbounded)

    def hit_tokens(self, capacity: float) -> int:
        """Tokens hit at `capacity` usable blocks (a block hits iff its distance < capacity)."""
        return int(self.cum_hits[np.searchsorted(self.depth_sorted, capacity, side="left")])

    def hit_rate(self, capacity: float) -> float:
        return self.hit_tokens(capacity) / self.total_tokens if self.total_tokens else 0.0

    @property
    def ceiling_tokens(self) -> int:
        return int(self.cum_hits[-1])

    @property
    def ceiling_capacity(self) -> int:
        """The smallest capacity reaching the ceiling (0 when nothing ever hits)."""
        return int(self.depth_sorted[-1]) + 1 if len(self.depth_sorted) else 0

    def knee(self, fraction: float) -> int | None:
        """Smallest capacity whose hit tokens reach `fraction` of the ceiling."""
        if not len(self.depth_sorted) or self.ceiling_tokens == 0:
            return None
        i = int(np.searchsorted(self.cum_hits, fraction * self.ceiling_tokens, side="left"))
        return int(self.depth_sorted[max(i - 1, 0)]) + 1

    def is_exact(self, capacity: float) -> bool:
        return self.exact_min <= capacity <= self.exact_max

    def not_exact_warning(self, capacities: list[int]) -> str:
        """Why LRU points at `capacities` (outside the exact range) run as replays instead."""
        lo, hi = self.exact_min, self.exact_max
        whys = []
        if min(capacities) < lo:
            whys.append(f"below {lo:,} blocks (the largest request's) some requests cannot run")
        if max(capacities) > hi:
            whys.append(f"from {hi + 1:,.0f} blocks a block-aligned prompt repeated while its "
                        "last block is cached allocates that block again (the one pass does "
                        "not model it)")
        why = "; ".join(whys)
        span = (f"only for capacities of {lo:,} to {hi:,.0f} blocks" if lo <= hi
                else "for no capacity of this trace")
        return (f"the one-pass LRU curve is exact {span}: {why}, so {len(capacities)} LRU "
                "point(s) run as cache-mode replays instead (slower)")


def _count_before(a: np.ndarray, s: np.ndarray, y: np.ndarray) -> np.ndarray:
    """For each query i: #{j < a[i] : y[j] < s[i]}, offline, for all queries at once.

    [0, a) splits into whole blocks of 2^K positions, answered from a prefix table over
    (block, distinct threshold), and a remainder that splits into dyadic blocks of 2^L < 2^K
    positions, answered per level by one sort and one binary search. K is chosen so that the
    table stays below ~4M entries.
    """
    n = len(y)
    out = np.zeros(len(a), dtype=np.int64)
    if n == 0 or len(a) == 0:
        return out
    if len(s) > 1 and np.all(s[1:] >= s[:-1]):
        # Sorted thresholds (the one pass asks in request order): unique without a sort.
        new = np.concatenate(([True], s[1:] != s[:-1]))
        thresholds, t = s[new], np.cumsum(new) - 1
    else:
        thresholds, t = np.unique(s, return_inverse=True)
    yt = np.searchsorted(thresholds, y, side="right")     # y < thresholds[i]  <=>  yt <= i
    width = len(thresholds) + 1
    k = max(0, math.ceil(math.log2(max(n * width / TABLE_ENTRIES, 1))))
    rows = (n >> k) + 1
    table = np.bincount((np.arange(n) >> k) * width + yt, minlength=rows * width)
    table = table.reshape(rows, width).cumsum(axis=1, dtype=np.int32).cumsum(axis=0)
    block = a >> k
    nonzero = block > 0
    out[nonzero] = table[block[nonzero] - 1, t[nonzero]]
    # The remainder [block * 2^k, a): dyadic blocks, one level per bit of `a` below k.
    m = np.int64(width + 1)
    j = np.arange(n, dtype=np.int64)
    for level in range(min(k, n.bit_length())):
        sel = np.nonzero((a >> level) & 1)[0]
        if len(sel):
            b = (a[sel] >> level) - 1
            keys = (j >> level) * m + yt
            if level:      # level 0 is in position order already
                keys.sort()
            out[sel] += np.searchsorted(keys, b * m + t[sel], side="right") - (b << level)
    return out


def stack_distances(inp: CurveInput) -> np.ndarray:
    """Per key (in `inp.keys` order): distinct keys touched since its last touch, before its
    request starts; -1 for a key never seen before."""
    keys, starts = inp.keys, inp.starts
    n = len(keys)
    counts = np.diff(starts)
    req = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    s = starts[req]
    pos = s + starts[req + 1] - 1 - np.arange(n, dtype=np.int64)   # tail touched first
    tkeys = np.empty(n, dtype=np.int64)
    tkeys[pos] = keys
    order = stable_order(tkeys)
    same = tkeys[order[1:]] == tkeys[order[:-1]]
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, n, dtype=np.int64)
    prev[order[1:][same]] = order[:-1][same]
    nxt[order[:-1][same]] = order[1:][same]

    p = prev[pos]                       # previous touch of each lookup's key
    seen = np.nonzero(p >= 0)[0]
    ps, ss = p[seen], s[seen]
    # deleted_in(p, s) = #{j > p : nxt[j] < s} = #{j : nxt[j] < s} - #{j <= p : nxt[j] < s}
    # Only positions whose key is touched again can be deleted: count among those alone.
    again = np.nonzero(nxt < n)[0]
    y = nxt[again]
    deleted = (np.searchsorted(np.sort(y), ss, side="left")
               - _count_before(np.searchsorted(again, ps, side="right"), ss, y))
    depth = np.full(n, -1, dtype=np.int64)
    depth[seen] = (ss - 1 - ps) - deleted
    return depth


def one_pass(inp: CurveInput) -> OnePass:
    """The LRU hit curve at every capacity (see the module docstring for where it is exact)."""
    n = len(inp.keys)
    counts = np.diff(inp.starts)
    nreq = len(counts)
    req = np.repeat(np.arange(nreq, dtype=np.int64), counts)
    chain_index = np.arange(n, dtype=np.int64) - inp.starts[req]
    raw = stack_distances(inp)
    never = np.int64(1 << 62)
    eff = np.where(raw >= 0, raw, never)
    exact_min, exact_max = 1, float("inf")
    if inp.rule == "vllm":
        partial = (inp.num_tokens % inp.block_size != 0).astype(np.int64)
        partial_prev = np.concatenate(([0], partial[:-1]))
        eff = np.where(raw >= 0, raw + partial_prev[req], never)
        exact_min = int(inp.num_blocks.max()) if nreq else 1
        # A block-aligned prompt's last key lies beyond the N-1 cap: when it is still cached a
        # second block is allocated for it, which the stack does not model (module docstring).
        last = inp.starts[1:] - 1
        beyond = np.nonzero((inp.hit_cap < counts) & (counts > 0))[0]
        beyond = beyond[raw[last[beyond]] >= 0]
        if len(beyond):
            exact_max = float(eff[last[beyond]].min())
    eff = np.where(chain_index < inp.hit_cap[req], eff, never)
    # A block hits only with its whole prefix: running max of distances within each request.
    # Offsetting each request by a growing constant lets one accumulate run over all of them.
    span = np.int64(1 << 40)
    capped = np.minimum(eff, span - 1)
    runmax = np.maximum.accumulate(capped + req * span) - req * span
    counted = (req >= inp.first_counted) & (runmax < span - 1)
    d = runmax[counted]
    order = stable_order(d)
    cum = np.concatenate(([0], np.cumsum(inp.weights[counted][order])))
    total = int(inp.num_tokens[inp.first_counted:].sum())
    return OnePass(depth_sorted=d[order], cum_hits=cum, total_tokens=total,
                   exact_min=exact_min, exact_max=exact_max)
