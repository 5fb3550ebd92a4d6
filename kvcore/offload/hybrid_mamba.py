"""The CPU tier's Mamba groups: the stores of cached states (vLLM 0.33's
`_build_aligned_boundary_store_jobs`, offloading/scheduler.py:1554-1624).

A Mamba group's chunk stands for one state, the one at the chunk's end: the regular store pass
cannot read it from the append-only block table (align mode keeps only the latest state, the
rest are nulls), so the GPU side hands off each state it caches (`MambaManager.state_offers`,
under the retention mask) with its block and boundary, and `take_offers` drains them once per
`schedule()`, groups in order. Each offer that survives the filters becomes its own job, with
its own `prepare_store`, before the attention pass:

* dropped: the null block, a boundary past the offloadable tokens (the request's tokens, its
  prompt with ``prompt_only``) or off the chunk (with 2 blocks a chunk, an odd block's state
  never reaches the CPU);
* the job copies that one block; it is fenced at once (a reuse of the block flushes it), as a
  sliding window's blocks are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.managers.mamba import MambaManager
from kvcore.offload.hybrid_partial import build_tail_jobs, offer_label
from kvcore.offload.jobs import Job
from kvcore.offload.keys import make_key
from kvcore.offload.stores import new_store_job, offer_in_order

if TYPE_CHECKING:
    from kvcore.offload.hybrid import HybridConnector


def take_offers(conn: HybridConnector) -> dict[str, list[tuple[int, int, int]]]:
    """The step's hand-offs, request by request in first-offer order (groups in order):
    (group, block id, boundary tokens)."""
    out: dict[str, list[tuple[int, int, int]]] = {}
    managers = conn.kvm.coordinator.single_type_managers
    for g in conn.mamba_groups:
        m = managers[g]
        assert isinstance(m, MambaManager) and m.state_offers is not None
        offers = m.state_offers
        for rid, block, boundary in offers:
            out.setdefault(rid, []).append((g, block.block_id, boundary))
        offers.clear()
    return out


def build_state_jobs(conn: HybridConnector, store_jobs: dict[int, Job],
                     scheduled: dict[str, int]) -> None:
    """One store job per surviving offer (the offers were drained before any other store)."""
    handoffs = take_offers(conn)
    if not handoffs:
        return
    cfg = conn.cfg
    tpc, hbs = conn.mamba_align, conn.kvm.block_pool.hash_block_size
    n_groups = len(conn.infos)
    for rid, entries in handoffs.items():
        st = conn.hstates.get(rid)
        if st is None:
            continue
        req = st.req
        top = min(req.num_tokens, req.num_prompt_tokens) if cfg.prompt_only else req.num_tokens
        for g, bid, boundary in entries:
            if bid == 0 or boundary > top or boundary % tpc:
                continue
            key = make_key(req.block_hashes[boundary // hbs - 1], g)
            st.ctx.set_position(key, boundary)
            label = offer_label(conn, st, g, key, boundary)    # "tN" while not yet keyed
            offer = offer_in_order(conn, st, [key], {str(g): [label]})
            if offer is None or not offer.keys_to_store:
                continue
            sizes = [0] * n_groups
            sizes[g] = 1
            job = new_store_job(conn, st, offer, [bid], store_jobs, sizes=sizes, window=[bid])
            conn.fenced.setdefault(bid, set()).add(job.job_id)
    if conn.partial_block:
        build_tail_jobs(conn, handoffs, store_jobs, scheduled)     # then the partial tails
