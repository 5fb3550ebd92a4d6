"""The end of a step's `schedule()` for the CPU tier over several KV cache groups (vLLM 0.33's
`build_connector_meta` with its `_update_req_states` and `_build_store_jobs`, offloading/
scheduler.py; the one-group form is `stores.py`).

1. Each scheduled request's keys (every group) and block ids are brought up to date: an
   admitted or resumed request's whole tables, a running one's new blocks. The blocks handed
   out this step are noted. In the windowed groups, a block id not yet stored that was handed
   out again this step (the window freed it) is zeroed.
2. Flushes: a preempted request's stores, and every store watching a block handed out.
3. One offer per request (scheduled ones, then the finished): per group, the chunks from its
   next-to-store index up to its storable ones, each standing for its last GPU block, skipping
   null blocks, a sliding group's chunks no reachable block of which ends a hit
   (`reachable_mask`) and chunks with a reachable null block. The job copies each accepted
   key's non-null blocks, group by group (`group_sizes`); its windowed groups' blocks are
   watched at once, the others once the request finishes.
4. The finished requests' observations go to the policy.

A request inside a decode window (`kvcore.quiet_steps`) is in no ``eager`` list: its step
touches no block in any group, completes no key and stores nothing past its last offer, which
did not fail (a failed offer is made again each step: ``conn.offer_failed`` keeps its request
out of windows), so vLLM's loops would do nothing for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.managers.sliding_window import contiguous_blocks_for_hit, window_runs_mask
from kvcore.offload.eagle import storable_chunks
from kvcore.offload.final_tail import final_tail
from kvcore.offload.hybrid_mamba import build_state_jobs
from kvcore.offload.jobs import ConnectorMeta, Job
from kvcore.offload.stores import add_flushes, close_step, new_store_job, store_horizon

if TYPE_CHECKING:
    from kvcore.offload.hybrid import HybridConnector, HybridState
    from kvcore.offload.hybrid_groups import GroupInfo
    from kvcore.request import Request


def reachable_mask(info: GroupInfo, start: int, end: int, bs: int, align: int | None,
                   retention: int | None, boundaries: tuple[int, ...],
                   eagle: bool = False, final_end: int | None = None) -> list[bool] | None:
    """vLLM's `SlidingWindowManager.reachable_block_mask` for blocks ``start..end``: the
    ``need`` blocks a hit's window reads before each segment's end (an EAGLE group's one more,
    ending one block later: `eagle`), a segment being the
    retention interval (N > 0), the alignment (dense retention, None: a tail before every
    aligned boundary a hit may end on) or none (0: only the ``boundaries``' tails); None:
    every block.

    vLLM's dense rule also keeps the tail of a final partial segment (`final_segment_end_block`,
    from `_build_store_jobs`' store horizon) and pulls a finished request's start back to that
    segment (`reconsider_final_swa_tail`). Both vanish here: the segment is the alignment, and
    the alignment is the chunk (every group has the tier's block), so a horizon in whole chunks
    ends a segment and no segment is partial."""
    if info.sliding is None or align is None or align % bs:
        # (None: the full groups' chunks differ, vLLM's alignment_tokens None: no mask)
        return None
    need = contiguous_blocks_for_hit(info.sliding, bs, eagle)
    return window_runs_mask(start, end, bs, align, need, eagle,
                            align if retention is None else retention, boundaries, final_end)


def build_meta(conn: HybridConnector, scheduled: dict[str, int], eager: list[Request],
               admitted: set[str], preempted: list[str], finished: list[str]) -> ConnectorMeta:
    states = conn.hstates
    managers = conn.kvm.coordinator.single_type_managers
    allocated = conn.allocated
    windowed = conn.windowed
    ends: dict[str, list[int]] = {}
    for sreq in eager:
        rid = sreq.request_id
        st = states[rid]
        conn.update_keys(st)
        full = rid in admitted
        if full:
            for gs in st.groups:
                gs.block_ids = []
        before = [len(st.groups[g].block_ids) for g in windowed]
        for gs, m in zip(st.groups, managers):
            table = m.req_to_blocks.get(rid)
            if table is None:
                continue
            if full or table is not gs.table:
                new = [b.block_id for b in table]
                gs.block_ids = []
            else:
                new = [b.block_id for b in table[gs.n_seen:]]
            gs.table = table
            gs.n_seen = len(table)
            gs.block_ids.extend(new)
            allocated.update(new)
        ends[rid] = before
    for m in managers:
        if m.pending_cow:
            # a copy-on-write's destination is written this step (vLLM's
            # kv_cache_block_copies: a store reading it is flushed)
            allocated.update([c.block_id for _, c in m.pending_cow])
    allocated.discard(0)
    if windowed and allocated:
        bpc = conn.cfg.blocks_per_chunk
        for rid, st in states.items():
            pre = ends.get(rid)
            for i, g in enumerate(windowed):
                ids = st.groups[g].block_ids
                for j in range(st.groups[g].next_stored * bpc,
                               pre[i] if pre is not None else len(ids)):
                    if ids[j] in allocated:
                        ids[j] = 0
    flush = add_flushes(conn, states, preempted)
    store_jobs: dict[int, Job] = {}
    if conn.mamba_groups:
        build_state_jobs(conn, store_jobs, scheduled)
    for sreq in eager:
        _offer(conn, states[sreq.request_id], scheduled[sreq.request_id], store_jobs)
    return close_step(conn, states, finished, flush, store_jobs, _offer)


def _offer(conn: HybridConnector, st: HybridState, n_scheduled: int,
           store_jobs: dict[int, Job]) -> None:
    req = st.req
    cfg = conn.cfg
    finished = req.is_finished()
    horizon = store_horizon(req, cfg.prompt_only, n_scheduled)
    bpc = cfg.blocks_per_chunk
    retention = conn.retention
    boundaries: tuple[int, ...] = ()
    if retention is not None:
        boundaries = (req.num_prompt_tokens - 1,)
        if req.shared_prefix_boundary:
            boundaries += (req.shared_prefix_boundary,)
    offered: list[bytes] = []
    by_group: dict[str, list[int]] = {}
    ranges: list[tuple[int, int]] = []
    for g, (info, gs) in enumerate(zip(conn.infos, st.groups)):
        ids = gs.block_ids
        eagle = g in conn.eagle_groups
        c, bs = conn.tpcs[g], conn.blocks[g]
        n = min(storable_chunks(horizon // c, eagle, horizon, req.num_prompt_tokens, finished),
                len(ids) // bpc, len(gs.keys))
        s = gs.next_stored
        tail = final_tail(conn.alignment, info.sliding is not None, bs, retention, eagle,
                          finished, n, req.num_prompt_tokens // c)
        if tail.reconsider:
            s = min(s, (n * bpc - n * bpc % tail.align_blocks) // bpc)
        ranges.append((s, n))
        if n <= s or info.mamba:
            continue
        mask = reachable_mask(info, s * bpc, n * bpc, bs, conn.alignment, retention,
                              boundaries, eagle, tail.end(bpc))
        again = reachable_mask(info, s * bpc, n * bpc, bs, conn.alignment, retention,
                               boundaries, eagle, tail.prompt_chunks * bpc) \
            if tail.reconsider else None
        for j in range(n - s):
            chunk = s + j
            if ids[chunk * bpc + bpc - 1] == 0:
                continue
            if tail.reconsider and chunk < gs.next_stored and (
                    again is None or any(again[j * bpc:(j + 1) * bpc])):
                continue        # (stored or passed over before: only a new final tail)
            if mask is not None and not any(mask[j * bpc:(j + 1) * bpc]):
                continue
            if any(ids[chunk * bpc + b] == 0 and (mask is None or mask[j * bpc + b])
                   for b in range(bpc)):
                continue
            offered.append(gs.keys[chunk])
            by_group.setdefault(str(g), []).append(chunk)
    if not offered:
        conn.offer_failed.discard(req.request_id)
        _advance(st, ranges)
        return
    manager = conn.manager
    offer = manager.prepare_store(offered, st.ctx)
    rec = conn.rec
    entry = {"chunks": by_group, "n_absent": manager.offered_absent}
    if conn.mamba_groups:
        rec.offers.setdefault(req.request_id, []).append(entry)
    else:
        rec.offers[req.request_id] = entry
    if offer is None:
        conn.failures += 1
        rec.alloc_failures.append(req.request_id)
        conn.offer_failed.add(req.request_id)   # (it offers again each step: no decode window)
        return
    conn.offer_failed.discard(req.request_id)
    rec.evicted.extend(offer.evicted)
    if not offer.keys_to_store:
        _advance(st, ranges)
        return
    chosen = set(offer.keys_to_store)
    src: list[int] = []
    sizes: list[int] = []
    now: list[int] = []
    later: list[int] = []
    for info, gs, (s, n) in zip(conn.infos, st.groups, ranges):
        ids = gs.block_ids
        count = 0
        watch = now if info.window is not None else later
        for chunk in range(s, n):
            if gs.keys[chunk] not in chosen:
                continue
            for b in ids[chunk * bpc:(chunk + 1) * bpc]:
                if b:
                    src.append(b)
                    watch.append(b)
                    count += 1
        sizes.append(count)
        gs.next_stored = max(gs.next_stored, n)
    job = new_store_job(conn, st, offer, src, store_jobs, fence=later, sizes=sizes, window=now)
    for bid in now:
        conn.fenced.setdefault(bid, set()).add(job.job_id)
    if finished:
        for bid in later:
            conn.fenced.setdefault(bid, set()).add(job.job_id)
            if bid in conn.allocated:
                conn.jobs_to_flush.add(job.job_id)


def _advance(st: HybridState, ranges: list[tuple[int, int]]) -> None:
    """vLLM's `advance_stored_idx`: each group's next chunk to store moves to its storable
    chunks."""
    for gs, (_, n) in zip(st.groups, ranges):
        gs.next_stored = max(gs.next_stored, n)
