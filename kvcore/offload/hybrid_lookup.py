"""The CPU tier's lookup over several KV cache groups (vLLM 0.33's
`OffloadingConnectorScheduler._lookup_complete_chunks`, offloading/scheduler.py; no EAGLE, no
per-request load cap). A Mamba group is a windowed group of one chunk: its state at the hit's
end must be on the CPU, and the end is floored to the chunk.

Full-attention groups first (in group order), then the windowed groups, widest window in chunks
first. The end starts at the request's tokens, one less with a windowed group (its last prompt
token is recomputed); each group caps it at its keys and tightens it to its hit edge:

* a full group counts the leading hits from chunk ``L // C`` (a chunk still being written
  counts, but the answer is then "not yet"; a miss stops);
* a windowed group scans backward from the end for a run of hits as long as its window (the
  load window at the candidate end for the first run, the plain window after a gap); the hit
  ends at the run's right edge; a run reaching back to chunk ``L // C`` also counts.

A group shrinking the hit below what the earlier groups agreed on starts another pass: over all
groups if one said "not yet", else over the windowed groups if one was already looked up. The
hit is then refused ("not yet") if another request is loading any chunk it would read (a
windowed group: only its load window's chunks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.offload.keys import HIT, HIT_PENDING, MISS

if TYPE_CHECKING:
    from kvcore.offload.hybrid import HybridConnector, HybridState


def _prefix(manager, keys: list[bytes]) -> int | None:
    hits = 0
    pending = False
    for key in keys:
        r = manager.lookup(key)
        if r == MISS:
            break
        hits += 1
        pending |= r == HIT_PENDING
    return None if pending else hits


def _window(manager, keys: list[bytes], window: int, first_window: int) -> int | None:
    pending = False
    run = 0
    need = first_window or window
    for idx in range(len(keys) - 1, -1, -1):
        r = manager.lookup(keys[idx])
        if r == HIT:
            run += 1
        elif r == HIT_PENDING:
            pending = True
            run += 1
        else:
            run = 0
            pending = False
            need = window
        if run == need:
            return None if pending else idx + need
    return None if pending else run


def lookup(conn: HybridConnector, st: HybridState) -> int | None:
    """Tokens past the GPU hit the tier can load, or None ("not yet")."""
    tpcs = conn.tpcs     # (each group's own chunk: groups of several block sizes)
    local = st.num_local
    manager = conn.manager
    infos = conn.infos
    end = st.req.num_tokens
    if conn.windowed:
        end -= 1
        if conn.mamba_groups:
            # a Mamba state exists only at its chunk's end
            end = end // conn.mamba_align * conn.mamba_align
    num_hit = 0
    defer = False
    groups: tuple[int, ...] = conn.lookup_order
    for gs in st.groups:
        gs.hit_end = 0
    flagged = conn.eagle_groups
    # the flagged groups that popped their volatile chunk in this pass (`eagle`)
    verified: set[int] = set()
    while groups:
        looked_windowed = False
        current, groups = groups, ()
        for g in current:
            c = tpcs[g]
            start = local // c
            info = infos[g]
            keys = st.groups[g].keys
            end = min(end, len(keys) * c)
            if end - local < c:
                return 0
            pop = int(g in flagged and g not in verified)
            query = min(end + c, len(keys) * c) if pop else end
            n_chunks = min(-(-query // c), len(keys))
            window = keys[start:n_chunks]
            n: int | None
            if info.window is None:
                n = _prefix(manager, window)
                st.groups[g].hit_end = start + (n or 0)
            else:
                first = info.load_window(min(end, (n_chunks - pop) * c), c)
                n = _window(manager, window, info.window + pop, (first or 0) + pop)
            if n == 0:
                return 0
            if n is None:
                defer = True
            else:
                if pop:
                    n -= 1
                    verified.add(g)
                end = min(end, c * (start + n))
            new = end - local
            if new < c:
                return 0
            if new < num_hit:
                if g not in flagged:
                    verified.clear()
                if defer:
                    defer = False
                    groups = conn.lookup_order
                elif looked_windowed and not groups:
                    groups = conn.windowed
            looked_windowed |= info.window is not None
            num_hit = new
    if defer:
        return None
    loading = conn.being_loaded
    if loading:
        for info, gs, c in zip(infos, st.groups, tpcs):
            keys = gs.keys[local // c:-(-(local + num_hit) // c)]
            w = info.load_window(local + num_hit, c)
            if w is not None:
                keys = keys[-w:]
            if any(k in loading for k in keys):
                return None
    return num_hit
