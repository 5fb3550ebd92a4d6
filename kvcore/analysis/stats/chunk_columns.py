"""A chunk's events as columns (`columns`): the block mentions, the hashes and the admissions'
lookups gathered in stream order into numpy arrays, then run through `chunk_blocks.BlockPass`,
`chunk_hashes.HashAsOf` and `chunk_hashes.SeenAsOf`. The result says what each event changes
that the ordered pass (chunks.py) needs, and commits the rest. None whenever the chunk needs
the reference (chunks.py says when); nothing is changed before `Columns.commit`.
"""

from __future__ import annotations

from itertools import chain

import numpy as np

from kvcore.analysis.stats.blockkeys import block_keys
from kvcore.analysis.stats.chunk_blocks import (
    ALLOC, CACHE, DEC, EVICT, FRD, TOUCH, BlockPass, block_effects,
)
from kvcore.analysis.stats.chunk_hashes import QUERY, HashAsOf, SeenAsOf

ADMIT = 7
_BLOCK = {"allocate": ALLOC, "touch": TOUCH, "cache": CACHE, "evict": EVICT, "free": DEC,
          "admit": ADMIT}
_NO_RID = 0xFFFFFFFF                                   # `_evictor(None)`


class Columns:
    """What a chunk's columns found (see `columns`)."""

    def __init__(self, kinds, pre, bp, effects, hashes, seen) -> None:
        self.kinds = kinds          # per event: its block-kind code, ADMIT, or None
        self.pre = pre              # event index -> the lookups of a counted admission
        self.bp = bp
        self.fresh, self.idle, self.held = effects
        self.hashes = hashes        # [(group, HashAsOf)]
        self.seen = seen

    def commit(self, c, held) -> None:
        if self.bp is not None:
            self.bp.commit(c)
        for g, p in self.hashes:
            p.commit(c, g, held[g], c.evicted[g])
        if self.seen is not None:
            self.seen.commit(c.miss.seen)


def _ints(lists: list, dtype) -> np.ndarray:
    """The lists' items as one array; ValueError unless every item is an int (no bool, no
    float) that fits ``dtype`` (OverflowError from numpy)."""
    flat = list(chain.from_iterable(lists))
    if not set(map(type, flat)) <= {int}:
        raise ValueError("not ints")
    return np.array(flat, dtype=dtype)


def _lens(lists: list) -> np.ndarray:
    return np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))


def columns(c, held: list, events: list[tuple[int, dict]]) -> Columns | None:
    """The chunk's columns and passes (module docstring); raises or returns None when the
    chunk needs the reference."""
    g_ = _Gather(c)
    for i, (_, ev) in enumerate(events):
        if not g_.add(i, ev):
            return None
    bp = None
    if g_.blists:
        lens = _lens(g_.blists)
        block = _ints(g_.blists, np.int64)
        if len(block):
            if block.min() < 0 or block.max() >= len(c.ref):
                return None
            code = np.repeat(np.array(g_.bcodes, dtype=np.int8), lens)
            step = np.repeat(np.array(g_.bsteps, dtype=np.int64), lens)
            evi = np.repeat(np.array(g_.bevents, dtype=np.int64), lens)
            adm = np.repeat(np.array(g_.badm, dtype=np.int64), lens)
            hashed = (code == CACHE) | (code == EVICT)
            hsh = np.zeros(len(block), dtype=np.uint64)
            ops = [lst for lst, k in zip(g_.hlists, g_.hkinds) if k != QUERY]
            hsh[hashed] = _ints(ops, np.uint64)
            bp = BlockPass(c, block, code, step, hsh, adm)
            if not bp.ok:
                return None
    hashes = []
    if g_.hlists:
        hlens = _lens(g_.hlists)
        hq = _ints(g_.hlists, np.uint64)
        kind = np.repeat(np.array(g_.hkinds, dtype=np.int8), hlens)
        group = np.repeat(np.array(g_.hgroups, dtype=np.int64), hlens)
        step = np.repeat(np.array(g_.hsteps, dtype=np.int64), hlens)
        packed = np.repeat(np.array(g_.hpacked, dtype=np.int64), hlens)
        qid = np.full(len(hq), -1, dtype=np.int64)
        isq = kind == QUERY
        qid[isq] = np.arange(int(np.count_nonzero(isq)))
        for g in np.unique(group).tolist():
            sel = group == g
            p = HashAsOf(held[g], c.evicted[g], hq[sel], kind[sel], step[sel], packed[sel],
                         qid[sel], int(np.count_nonzero(isq)))
            if not p.ok:
                return None
            hashes.append((g, p))
    seen = None
    if g_.klists:
        klens = _lens(g_.klists)
        keys = np.concatenate(g_.klists)
        vals = np.array(list(chain.from_iterable(g_.kvals)), dtype=np.int64)
        seen = SeenAsOf(c.miss.seen, keys, vals, np.repeat(np.arange(len(klens)), klens))
    pre = g_.lookups(hashes, seen)
    # the last step, and the first to change anything: the distributions
    zeros = [0] * len(events)
    effects = [zeros, zeros, zeros]
    if bp is not None:
        for j, counts in enumerate(block_effects(c, bp, evi, len(events))):
            if counts is not None:
                effects[j] = counts.tolist()
    return Columns(g_.kinds, pre, bp, effects, hashes, seen)


class _Gather:
    """The chunk's lists in stream order (`add` says False when an event is not as the
    columns take it)."""

    def __init__(self, c) -> None:
        self.c = c
        self.ng = len(c.cached)
        self.index = c.reqs.index
        self.new: dict = {}                  # requests arriving in the chunk -> their index
        self.adm = c.admissions              # counted admissions before the current event
        self.kinds: list[int | None] = []
        # block lists: an event's blocks (a free's, then its freed)
        self.blists: list[list] = []
        self.bcodes: list[int] = []
        self.bevents: list[int] = []
        self.bsteps: list[int] = []
        self.badm: list[int] = []
        # hash lists: cache and evict hashes (per group), admissions' missed hashes (queries)
        self.hlists: list[list] = []
        self.hkinds: list[int] = []
        self.hgroups: list[int] = []
        self.hsteps: list[int] = []
        self.hpacked: list[int] = []
        # block keys of the admissions, and per counted admission with hashes: (event index,
        # first query, queries, key list number or -1, kv)
        self.klists: list[np.ndarray] = []
        self.kvals: list[list] = []
        self.admits: list[tuple] = []
        self.nq = 0

    def _block(self, i: int, blocks: list, code: int, step: int) -> None:
        self.blists.append(blocks)
        self.bcodes.append(code)
        self.bevents.append(i)
        self.bsteps.append(step)
        self.badm.append(self.adm)

    def _hashes(self, hashes: list, kind: int, g: int, step: int, packed: int) -> None:
        self.hlists.append(hashes)
        self.hkinds.append(kind)
        self.hgroups.append(g)
        self.hsteps.append(step)
        self.hpacked.append(packed)

    def add(self, i: int, ev: dict) -> bool:
        kind = ev["kind"]
        code = _BLOCK.get(kind)
        self.kinds.append(code)
        if code is None:
            if kind == "arrive":            # the request index `reqs.arrive` will give it
                req = ev["req"]
                if req not in self.index and req not in self.new:
                    self.new[req] = len(self.index) + len(self.new)
            return True
        step = ev["step"]
        if type(step) is not int:
            return False
        if code == ADMIT:
            return self._admit(i, ev, step)
        blocks = ev.get("blocks")
        g = ev.get("group")
        if type(blocks) is not list or type(g) is not int or not 0 <= g < self.ng \
                or "req" not in ev:
            return False
        self._block(i, blocks, code, step)
        if code == DEC:
            freed = ev.get("freed")
            if type(freed) is not list:
                return False
            self._block(i, freed, FRD, step)
        elif code != ALLOC:
            hashes = ev.get("hashes")
            if type(hashes) is not list or len(hashes) != len(blocks):
                return False
            if code == CACHE:
                self._hashes(hashes, CACHE, g, step, 0)
            elif code == EVICT:
                req = ev["req"]
                rid = _NO_RID if req is None else self.index.get(req, self.new.get(req))
                if rid is None:
                    return False
                self._hashes(hashes, EVICT, g, step, (step << 32) | rid)
        return True

    def _admit(self, i: int, ev: dict, step: int) -> bool:
        """What `_admit` will look up (`MissStats.attribute`, `remember_admission`)."""
        c = self.c
        counted = ev["counted"]
        hit, prompt = ev["hit_tokens"], ev["prompt_tokens"]
        if type(hit) is not int or type(prompt) is not int or type(counted) is not bool \
                or ev.get("hash_domain") is not None:
            return False
        if counted:
            self.adm += 1
        elif ev.get("resumed"):
            return True
        ref, bs = c.ref_group, c.miss.bs
        ph = ev.get("prompt_hashes")
        if ph is None or len(ph) <= ref or ph[ref] is None:
            return True
        hashes = ph[ref]
        if type(hashes) is not list:
            return False
        if counted:
            n_full = prompt // bs
            if len(hashes) != n_full:
                return False
            hit_blocks = min(hit // bs, n_full)
        else:
            hit_blocks = min(hit // bs, len(hashes))
        kv = block_keys(ev, ref, hashes, hit_blocks)
        k = -1
        if kv is not None:
            k = len(self.klists)
            self.klists.append(kv[2])
            self.kvals.append(kv[1])
        if counted:
            miss = hashes[hit_blocks:]
            self.admits.append((i, self.nq, len(miss), k, kv))
            self.nq += len(miss)
            self._hashes(miss, QUERY, ref, step, 0)
        return True

    def lookups(self, hashes: list, seen: SeenAsOf | None) -> dict:
        """Per counted admission with hashes: (kv, block keys' values, cached?, history)."""
        ref = next((p for g, p in hashes if g == self.c.ref_group), None)
        out = {}
        starts = np.cumsum([0] + [len(k) for k in self.klists])
        for i, q0, nq, k, kv in self.admits:
            sb = None if k < 0 or seen is None else seen.before[starts[k]:starts[k + 1]]
            if ref is None:         # no query at all: every missed list was empty
                in_c, was = np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
            else:
                in_c, was = ref.in_c[q0:q0 + nq], ref.was[q0:q0 + nq]
            out[i] = (kv, sb, in_c, was)
        return out
