"""The end of a step's `schedule()` for the CPU tier: flushes, store offers, finished commits.

vLLM 0.33's `OffloadingConnectorScheduler.build_connector_meta` for one full-attention group:

1. Each scheduled request's keys and block table are brought up to date; the blocks handed
   out this step (an admitted request's whole table, hits included; a running request's new
   blocks) are noted.
2. Flushes: the in-flight stores of a request preempted this step, and every store that
   watches a block handed out this step (a finished request's stores watch their source
   blocks: the worker must copy them before the blocks are overwritten).
3. Offers, one `prepare_store` per request: each scheduled request, then each request that
   finished in the previous step, offers its chunks from the cursor up to its horizon (computed
   tokens after this step, or ``max(prompt, num_tokens - 1)`` when finished; capped at the
   prompt with ``prompt_only``, and by its keyed and allocated chunks). A failed offer keeps the
   cursor (offered again next step); a successful one makes one store job of its absent chunks.
4. The finished requests' observations go to the policy (`on_request_finished`), in finish order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kvcore.offload.eagle import storable_chunks
from kvcore.offload.jobs import ConnectorMeta, Job

if TYPE_CHECKING:
    from kvcore.offload.connector import OffloadingConnector
    from kvcore.offload.jobs import RequestOffloadState
    from kvcore.request import Request

# A store builder's offer of a request's chunks (`_offer` here, `hybrid_stores._offer`).
Offer = Callable[[Any, Any, int, "dict[int, Job]"], None]


def build_connector_meta(conn: OffloadingConnector, scheduled: dict[str, int],
                         eager: list[Request], admitted: set[str], preempted: list[str],
                         finished: list[str]) -> ConnectorMeta:
    """``scheduled``: the step's scheduled tokens (running first, then admitted, before the
    computed tokens advance); ``eager``: the requests among them scheduled in full, in that
    order (the others are inside decode windows: `kvcore.engine.decode_windows`);
    ``admitted``: requests scheduled with their whole table this step (admitted or resumed);
    ``finished``: the requests that finished since the last step.

    A request inside its decode window is left out of steps 1 and 3: its step allocates no
    block, completes no block hash (so no new key) and computes no token past its last full
    chunk, and its last offer did not fail (no window opens after a failed offer:
    ``conn.offer_failed``), so it offers nothing; vLLM's loop looks at it and does nothing.
    Gain: with windows on, the loops see about 2 of a decoding request's 16 steps (block size
    16)."""
    if conn.hybrid:
        from kvcore.offload.hybrid import HybridConnector
        from kvcore.offload.hybrid_stores import build_meta
        assert isinstance(conn, HybridConnector)
        return build_meta(conn, scheduled, eager, admitted, preempted, finished)
    cfg = conn.cfg
    bpc, tpc = cfg.blocks_per_chunk, cfg.tokens_per_chunk
    states = conn.states
    handed_out = conn.handed_out
    tables = conn.kvm.coordinator.single_type_managers[0].req_to_blocks
    prompt_only = cfg.prompt_only
    for sreq in eager:
        rid = sreq.request_id
        st = states[rid]
        req = st.req
        # (with prompt-only stores a running request's keys past its prompt wait for the next
        # reader: its lookup after a preemption, or its finish, both bring them up to date)
        if len(req.block_hashes) >= bpc * (len(st.keys) + 1) and not (
                prompt_only and len(st.keys) >= req.num_prompt_tokens // tpc):
            st.update_keys(bpc)
        table = tables.get(rid)
        if table is None:
            continue
        # (a table only grows while its request runs: the live list stands for vLLM's copy)
        if rid in admitted or table is not st.blocks:
            handed_out.append(table)
        elif len(table) > st.n_seen:
            handed_out.append(table[st.n_seen:])
        st.blocks = table
        st.n_seen = len(table)
    flush = add_flushes(conn, states, preempted)
    store_jobs: dict[int, Job] = {}
    for sreq in eager:
        offering = states[sreq.request_id]
        if prompt_only and offering.next_stored >= sreq.num_prompt_tokens // tpc:
            continue        # its prompt is stored (or offered in full): nothing more to offer
        _offer(conn, offering, scheduled[sreq.request_id], store_jobs)
    return close_step(conn, states, finished, flush, store_jobs, _offer)


def add_flushes(conn: OffloadingConnector, states: dict[str, Any], preempted: list[str]
                ) -> set[int]:
    """The step's flushes, one group or several: a preempted request's stores (not its load),
    and every store watching a block handed out this step."""
    flush = conn.jobs_to_flush
    for rid in preempted:
        victim = states.get(rid)
        if victim is not None:
            flush.update(j for j in victim.jobs if j not in conn.load_jobs)
    if conn.fenced:
        allocated = conn.allocated_ids()
        if not conn.fenced.keys().isdisjoint(allocated):
            flush.update(j for bid in allocated if bid in conn.fenced for j in conn.fenced[bid])
    return flush


def store_horizon(req: Request, prompt_only: bool, n_scheduled: int) -> int:
    """The tokens a request may store up to: computed after this step, or ``max(prompt,
    num_tokens - 1)`` once finished; never past its tokens, nor its prompt with
    ``prompt_only``."""
    if req.is_finished():
        horizon = max(req.num_prompt_tokens, req.num_tokens - 1)
    else:
        horizon = req.num_computed_tokens + n_scheduled
    horizon = min(horizon, req.num_tokens)
    return min(horizon, req.num_prompt_tokens) if prompt_only else horizon


def close_step(conn: OffloadingConnector, states: dict[str, Any], finished: Any,
               flush: set[int], store_jobs: dict[int, Job], offer: Offer) -> ConnectorMeta:
    """The end of a step's metadata, one group or several (`hybrid_stores`): each finished
    request's last offer (``offer``: the builder's), the step's meta, then the finished
    requests signalled (their states dropped once no job is left), the step's loads, sync
    loads and flushes reset."""
    for rid in finished:
        final = states.get(rid)
        if final is not None:
            offer(conn, final, 0, store_jobs)
    meta = ConnectorMeta(conn.load_jobs, store_jobs, flush)
    for rid in finished:
        done = states.get(rid)
        if done is None:
            continue
        done.finished_signaled = True
        conn.offer_failed.discard(rid)      # (a finished request offers once)
        conn.manager.on_request_finished(done.ctx)
        if not done.jobs:
            del states[rid]
    conn.load_jobs = {}
    conn.sync_loads = set()
    conn.sync_load_bytes = 0
    conn.jobs_to_flush = set()
    conn.end_step()
    return meta


def offer_in_order(conn: Any, st: Any, keys: list[bytes], chunks: dict[str, list]) -> Any:
    """One `prepare_store` of ``keys``, recorded as the request's next offer (the list form a
    Mamba state's or a partial tail's offers take, in `prepare_store` order); None when the
    manager refused it (an allocation failure, counted), else the offer, its evictions noted."""
    manager = conn.manager
    rec = conn.rec
    rid = st.req.request_id
    offer = manager.prepare_store(keys, st.ctx)
    rec.offers.setdefault(rid, []).append({"chunks": chunks, "n_absent": manager.offered_absent})
    if offer is None:
        conn.failures += 1
        rec.alloc_failures.append(rid)
        return None
    rec.evicted.extend(offer.evicted)
    return offer


def new_store_job(conn: OffloadingConnector, st: Any, offer: Any, src: list[int],
                  store_jobs: dict[int, Job], *, fence: list[int] | None = None,
                  sizes: list[int] | None = None, window: list[int] | None = None) -> Job:
    """A store job of ``offer``'s absent chunks from GPU blocks ``src`` (one group or several:
    ``fence`` the blocks it watches until the request finishes, ``sizes`` its blocks a group,
    ``window`` the windowed blocks it watches at once), registered with its request, the
    connector and the step's stores."""
    job = Job(conn._new_job_id(), st.req.request_id, offer.keys_to_store, src, offer.chunks,
              is_store=True, fence_block_ids=fence if fence is not None else [],
              statuses=offer.statuses, group_sizes=sizes,
              window_fence=window if window is not None else [])
    st.jobs.add(job.job_id)
    conn.jobs[job.job_id] = job
    store_jobs[job.job_id] = job
    return job


def _offer(conn: OffloadingConnector, st: RequestOffloadState, n_scheduled: int,
           store_jobs: dict[int, Job]) -> None:
    req = st.req
    cfg = conn.cfg
    # the storable chunks: full, keyed and allocated, up to the horizon
    horizon = store_horizon(req, cfg.prompt_only, n_scheduled)
    bpc = cfg.blocks_per_chunk
    blocks = st.blocks
    end = min(storable_chunks(horizon // cfg.tokens_per_chunk, conn.eagle, horizon,
                              req.num_prompt_tokens, req.is_finished()),
              len(blocks) // bpc, len(st.keys))
    start = st.next_stored
    if start >= end:            # nothing new (a decoding request's usual step)
        return
    # (vLLM skips a chunk with a null block: a full-attention table never has one)
    keys = st.keys[start:end]
    rec = conn.rec
    manager = conn.manager
    first = start
    offer = manager.prepare_store(keys, st.ctx, start)
    rec.offers[req.request_id] = [first, len(keys), manager.offered_absent]
    if offer is None:
        conn.failures += 1
        rec.alloc_failures.append(req.request_id)
        conn.offer_failed.add(req.request_id)
        return
    conn.offer_failed.discard(req.request_id)
    rec.evicted.extend(offer.evicted)
    if not offer.keys_to_store:
        st.next_stored = max(st.next_stored, end)
        return
    src: list[int]
    if len(offer.keys_to_store) == len(keys):      # every chunk (the usual case)
        src = [b.block_id for b in blocks[start * bpc:end * bpc]]
    else:
        chosen = set(offer.keys_to_store)      # in offer order, so in chunk order
        src = []
        for i, key in enumerate(keys, start):
            if key in chosen:
                src.extend(b.block_id for b in blocks[i * bpc:(i + 1) * bpc])
    st.next_stored = max(st.next_stored, end)
    job = new_store_job(conn, st, offer, src, store_jobs, fence=src)
    if req.is_finished():
        for bid in src:
            conn.fenced.setdefault(bid, set()).add(job.job_id)
            if bid in conn.allocated_ids():
                conn.jobs_to_flush.add(job.job_id)
