"""Block keys for the `partial_block` miss reason: (parent hash, first token) -> the first block
seen under that key.

A key names "the block after this prefix block, starting with this token"; its value is the
`_FP` bits of the block's hash, or `_TAIL` for a prompt's partial tail. Keys are made for every
missed block and partial tail of every admission, hundreds per admission, so they are mixed in
numpy (`mix`), a whole admission at once: ~0.3 µs a block with the lists around it, against
~0.55 µs for the per-block Python `hash((parent, token))` loop it replaces (measured on 800
blocks). The keys live only inside one stats run (`BlockKeys`, compared for equality, never
written out), so any well-mixed 64-bit function serves.
"""

from __future__ import annotations

import hashlib

import numpy as np

from kvcore.analysis.stats.history import EvictedHashes

_M64 = (1 << 64) - 1
_FP = (1 << 62) - 1      # a block's value in `BlockKeys`: the low 62 bits of its hash
_TAIL = 1 << 62          # ... or this for a partial tail
_TOKEN_MUL = np.uint64(0x9E3779B97F4A7C15)    # odd: token -> token * C is a bijection
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)         # splitmix64's finalizer (a bijection of 64 bits)
_MIX2 = np.uint64(0x94D049BB133111EB)


class BlockKeys(EvictedHashes):
    """(parent hash, first token) key -> the first block seen under it (`_FP` bits of its hash,
    or `_TAIL`). The same compact dict + sorted-array store as the evicted history."""


def u64(values) -> np.ndarray:
    """Python ints as uint64; ints outside 0..2^64-1 (only hand-built streams have them) are
    taken modulo 2^64."""
    try:
        return np.array(values, dtype=np.uint64)
    except OverflowError:
        return np.array([v & _M64 for v in values], dtype=np.uint64)


def mix(parents: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """The key of each (parent, token) pair: splitmix64's finalizer of parent ^ token * C.
    parent ^ token * C is one-to-one for a fixed parent, and the parents are 64-bit hashes, so
    two pairs collide only by chance (2^-64)."""
    k = parents ^ (tokens * _TOKEN_MUL)
    k ^= k >> np.uint64(30)
    k *= _MIX1
    k ^= k >> np.uint64(27)
    k *= _MIX2
    k ^= k >> np.uint64(31)
    return k


def root(domain: str | None) -> int:
    """The parent of block 0 in a key: 0, or a digest of the hash domain (stable across runs)."""
    if domain is None:
        return 0
    return int.from_bytes(hashlib.blake2b(domain.encode(), digest_size=8).digest(), "big")


def block_keys(ev: dict, ref: int, hashes: list[int], start: int
               ) -> tuple[list[int], list[int], np.ndarray] | None:
    """Keys and values of the prompt blocks from `start` on (full blocks, then the partial
    tail), and the keys as uint64, or None when the `admit` carries no `first_tokens`."""
    ft = ev.get("first_tokens")
    if not ft or len(ft) <= ref or ft[ref] is None:
        return None
    toks = ft[ref]
    n_full = len(hashes)
    if len(toks) not in (n_full, n_full + 1):
        raise ValueError(f"first_tokens[{ref}] has {len(toks)} entries for {n_full} full blocks")
    if start >= len(toks):
        return [], [], np.empty(0, dtype=np.uint64)
    first_parent = hashes[start - 1] if start else root(ev.get("hash_domain"))
    parents = u64([first_parent, *hashes[start:len(toks) - 1]])
    karr = mix(parents, u64(toks[start:]))
    vals = (u64(hashes[start:]) & np.uint64(_FP)).tolist()
    if len(toks) > n_full:
        vals.append(_TAIL)
    return karr.tolist(), vals, karr


def seen_array(seen: BlockKeys, kv: tuple[list[int], list[int], np.ndarray]) -> np.ndarray:
    """The value of each key of `block_keys` (int64, -1 when never seen)."""
    return seen.get_array(kv[0], kv[2])


def remember(seen: BlockKeys, kv: tuple[list[int], list[int], np.ndarray],
             found: np.ndarray) -> None:
    """Record the keys not seen before (`found`: `seen_array(seen, kv)`); a key twice in one
    call keeps its last value, as one `seen[k] = v` after the other did."""
    keys, vals, karr = kv
    new = np.flatnonzero(found < 0)
    if len(new) == len(keys):
        seen.put_many(keys, vals, karr)
    elif len(new):
        ids = new.tolist()
        seen.put_many([keys[i] for i in ids], [vals[i] for i in ids], karr[new])
    if seen.full():
        seen.merge()
