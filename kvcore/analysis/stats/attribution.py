"""The miss reason of every missed full block of one admission, all blocks at once.

The same decisions as `reasons_per_block` (the reference, one block at a time, below; the
order of the checks is in misses.py's docstring), made with boolean masks over the admission's
missed blocks: each membership test is one C-level pass (`map(set.__contains__, ...)` into
`np.fromiter`), each history lookup one vectorized search, and the if-chain becomes masks
assigned from the last check to the first, so that the first check that holds wins. An
admission has ~800 missed blocks on the conversation trace; with the block keys and the history
lookups around it, an admission took 2.5 ms in the per-block loop, 1.3 ms so (measured on the
trace's first 3,000 requests). Nothing here changes any state, so a malformed `admit` can fall
back to the per-block loop, which raises the reader's error.
"""

from __future__ import annotations

from operator import ne
from typing import TYPE_CHECKING

import numpy as np

from kvcore.analysis.stats.blockkeys import _FP, u64
from kvcore.analysis.stats.history import u64 as exact_u64

if TYPE_CHECKING:
    from kvcore.analysis.stats.misses import MissStats

REASONS = ("cold", "evicted", "partial_block", "last_token", "window", "domain", "in_flight",
           "unknown", "mamba_state")
# (no code is ever "in_flight" here: `MissStats.on_cached` moves a cold block there by name)
(COLD, EVICTED, PARTIAL, LAST_TOKEN, WINDOW, DOMAIN, _, UNKNOWN, MAMBA_STATE) = range(len(REASONS))
# with a CPU tier (a stream whose header says so): a GPU miss the tier served, and an evicted
# block whose chunk the tier evicted too (only then: the other streams' reports stay as they were)
TIER_REASONS = (*REASONS, "cpu_tier", "evicted_both")
CPU_TIER, EVICTED_BOTH = len(REASONS), len(REASONS) + 1
# and over full-attention and windowed groups both: an evicted block the tier's full groups held,
# that its windowed groups' chunks kept it from serving (cpu_window.py)
TIER_WINDOW_REASONS = (*TIER_REASONS, "cpu_window")
CPU_WINDOW = len(TIER_REASONS)
_RID_MASK = (1 << 32) - 1  # evicted[g][h] packs (evict step << 32) | evicting request index
_FP64 = np.uint64(_FP)


def _member(container, values: list) -> np.ndarray:
    """values[i] in container, as a bool array."""
    return np.fromiter(map(container.__contains__, values), dtype=bool, count=len(values))


def block_reasons(ms: MissStats, ev: dict, hashes: list[int], hit: int, tail: int,
                  seen_before: np.ndarray | None) -> tuple[np.ndarray, list[int]]:
    """(reason index of each missed full block, evicting request of each `evicted` block found
    in the history, in block order); `seen_before`: the block keys' values (-1: never seen)."""
    ref, cached = ms.ref, ms.cached
    n_full = len(hashes)
    miss = hashes[hit:]
    m = len(miss)
    c_ref = cached[ref]
    codes = np.full(m, COLD, dtype=np.int8)
    if not m:
        return codes, []
    content = ev.get("content_hashes")
    domain = ev.get("hash_domain")
    in_c = _member(c_ref, miss)
    q = exact_u64(miss)                      # None: a hash that is no uint64 (hand-built)
    was = ms.evicted[ref].get_array(miss, q)
    # not cached: evicted (in the history), else domain > partial_block > unknown > cold
    out = ~in_c
    ev_mask = out & (was >= 0)
    if domain is not None and not content:
        codes[:] = UNKNOWN
    if seen_before is not None:
        seen = seen_before[:m]
        fp = ((u64(miss) if q is None else q) & _FP64).astype(np.int64)
        codes[(seen >= 0) & (seen != fp)] = PARTIAL
    dc = ms.domain_content[ref]
    if domain is not None and content:
        chs = content[ref][hit:n_full]
        if len(chs) != m:
            raise IndexError("content_hashes shorter than prompt_hashes")
        seen_plain = _member(c_ref, chs) | (ms.evicted[ref].get_array(chs) >= 0)
        other = np.fromiter(map(ne, chs, miss), dtype=bool, count=m)
        dom = other & seen_plain
        if dc:
            dom |= _member(dc, chs)
        codes[dom] = DOMAIN
    elif dc:
        codes[_member(dc, miss)] = DOMAIN
    codes[ev_mask] = EVICTED
    # cached: last_token > the hybrid's other groups (full attention holds the block and every
    # block before it: another group stopped the lookup) > evicted (an earlier block of the
    # chain is not cached)
    codes[in_c] = EVICTED
    if ms.junction is not None and in_c.any():
        reach = m if in_c.all() else int(np.argmin(in_c))
        codes[:reach] = ms.junction
        if reach == m and tail == 0:        # the last whole block: past the lookup's cap
            codes[m - 1] = LAST_TOKEN
    if m == 1 and tail == 0 and in_c[0]:      # the prompt's last block, all before it hit
        codes[0] = LAST_TOKEN
    evictors = (was[ev_mask] & _RID_MASK).tolist() if ev_mask.any() else []
    return codes, evictors


def reasons_per_block(miss: MissStats, ev: dict, hashes: list[int], hit_blocks: int, tail: int,
                      seen_before: np.ndarray | None) -> tuple[list[int], list[int]]:
    """The reason (index in REASONS) of each missed full block, one block at a time, and the
    evicting request of each `evicted` block whose hash is in the history: the reference the
    vectorized `block_reasons` must match (and `MissStats`' fallback for a malformed `admit`)."""
    ref, cached = miss.ref, miss.cached
    n_full = len(hashes)
    content = ev.get("content_hashes")
    domain = ev.get("hash_domain")
    c_ref = cached[ref]
    e_ref = miss.evicted[ref]
    reach = hit_blocks          # full attention's chain: cached from the hit up to here
    while reach < n_full and hashes[reach] in c_ref:
        reach += 1
    was_evicted = e_ref.get_many(hashes[hit_blocks:])
    if domain is not None and content:
        content_evicted = e_ref.get_many(content[ref][hit_blocks:])
    codes = []
    evictors = []
    for i in range(hit_blocks, n_full):
        h = hashes[i]
        if h in c_ref:
            if i == n_full - 1 and tail == 0 and (
                    i == hit_blocks or (miss.junction is not None and i < reach)):
                reason = "last_token"
            elif miss.junction is not None and i < reach:
                reason = REASONS[miss.junction]
            else:
                reason = "evicted"
        elif (packed := was_evicted[i - hit_blocks]) is not None:
            reason = "evicted"
            evictors.append(packed & _RID_MASK)
        else:
            ch = h
            seen_plain = False
            if domain is not None and content:
                ch = content[ref][i]
                seen_plain = ch in c_ref or content_evicted[i - hit_blocks] is not None
            seen = -1 if seen_before is None else int(seen_before[i - hit_blocks])
            if (ch != h and seen_plain) or ch in miss.domain_content[ref]:
                reason = "domain"
            elif seen >= 0 and seen != h & _FP:
                reason = "partial_block"
            elif domain is not None and not content:
                reason = "unknown"    # another domain may hold it: content_hashes missing
            else:
                reason = "cold"
        codes.append(REASONS.index(reason))
    return codes, evictors
