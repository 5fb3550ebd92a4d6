"""The CPU tier's partial tails: a Mamba state inside a block (vLLM 0.33 with a hash block finer
than a Mamba group's block, `--prefix-match-unit`; offloading/scheduler.py).

vLLM turns them on (`supports_partial_tail`, 273-293) when a chunk is one block, every group
has that block, some align-mode Mamba group's block is coarser than the hash block and every
windowed group is a Mamba group. A partial tail at boundary ``b`` (a multiple of the hash block,
not of the block) is keyed, in every group, by the request's hash at ``b`` with the group
(`_make_boundary_key`, 1056-1066): it belongs to no chunk.

* Lookup (`_lookup`, 1068-1153): after the complete-chunk lookup ends at ``e``, boundaries from
  ``min(prompt - 1, e + block - 1)`` floored to the hash block down to past ``e``, one hash
  block apart, hit when every group's boundary key is on the CPU and ready. A boundary past the
  next block edge also loads that block's complete chunk (the "bridge"): the attention groups'
  bridge keys the complete lookup did not confirm are looked up once; a miss caps the search
  below the edge. "Not yet" only when the complete hit is 0 and some key looked at was not
  ready (or the bridge is being loaded).
* Store (`_build_partial_tail_store_jobs`, 1626-1760): after every request's aligned
  hand-offs, each request whose hand-offs include an off-block boundary (the producer's
  copy-on-write of its last prompt hash boundary, `kvcore.managers.mamba_partial`) makes one
  `prepare_store` of every group's key there: a Mamba group copies the copy-on-write block, an
  attention group the block holding the boundary; the job's blocks are watched at once.
* Load (`update_state_after_alloc`, 1375-1441): each group's complete chunks up to the
  boundary's block, then the boundary key into that block (`hybrid.HybridConnector`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.offload.hybrid_lookup import lookup
from kvcore.offload.keys import HIT, MISS, make_key
from kvcore.offload.stores import new_store_job, offer_in_order
from kvcore.specs import ChunkedLocalAttentionSpec, KVCacheSpec, MambaSpec, SlidingWindowSpec

if TYPE_CHECKING:
    from kvcore.offload.hybrid import HybridConnector, HybridState
    from kvcore.offload.jobs import Job


def partial_tail_block(specs: list[KVCacheSpec], blocks_per_chunk: int, hash_block: int) -> int:
    """vLLM's partial-tail block (group 0's block) when its rule holds, else 0: one block a
    chunk, one block size, a Mamba group (align mode: kvcli's with prefix caching) coarser
    than the hash block, no windowed group but Mamba ones (no EAGLE, no DCP here)."""
    on = (blocks_per_chunk == 1 and len({s.block_size for s in specs}) == 1
          and any(isinstance(s, MambaSpec) and s.block_size > hash_block for s in specs)
          and not any(isinstance(s, (SlidingWindowSpec, ChunkedLocalAttentionSpec))
                      for s in specs))
    return specs[0].block_size if on else 0


def boundary_key(conn: HybridConnector, st: HybridState, group: int, boundary: int) -> bytes:
    """A group's key at ``boundary`` (vLLM's `_make_boundary_key`: the position noted too)."""
    key = make_key(st.req.block_hashes[boundary // conn.hash_block - 1], group)
    st.ctx.set_position(key, boundary)
    return key


def lookup_with_tails(conn: HybridConnector, st: HybridState) -> int | None:
    """The complete-chunk lookup, then a partial tail past it (None: "not yet")."""
    complete = lookup(conn, st)
    st.partial_boundary = None
    if complete is None:
        return None
    local = st.num_local
    hbs, block = conn.hash_block, conn.partial_block
    end = local + complete
    top = min(st.req.num_prompt_tokens - 1, end + block - 1) // hbs * hbs
    if top <= end:
        return complete
    manager = conn.manager
    bridge = end // block
    edge = (bridge + 1) * block
    unconfirmed: list[bytes] = []
    pending = False
    if top >= edge:
        loading = conn.being_loaded or ()
        for info, gs in zip(conn.infos, st.groups):
            if info.mamba:
                continue
            key = gs.keys[bridge]
            pending |= key in loading
            if gs.hit_end <= bridge:
                unconfirmed.append(key)
        for key in unconfirmed:
            r = manager.lookup(key)
            if r == MISS:
                top = edge - hbs
                break
            pending |= r != HIT
    bridge_pending = pending
    n_groups = len(conn.infos)
    for boundary in range(top, end, -hbs):
        tail_pending = bridge_pending and boundary >= edge
        hit = True
        for g in range(n_groups):
            r = manager.lookup(boundary_key(conn, st, g, boundary))
            if r == MISS:
                hit = False
                break
            tail_pending |= r != HIT
        if hit and not tail_pending:
            st.partial_boundary = boundary
            return boundary - local
        pending |= tail_pending
    if pending and complete == 0:
        return None
    return complete


def build_tail_jobs(conn: HybridConnector,
                    handoffs: dict[str, list[tuple[int, int, int]]],
                    store_jobs: dict[int, Job]) -> None:
    """One `prepare_store` per request with an off-block hand-off: every group's key at its
    boundary."""
    block = conn.partial_block
    infos = conn.infos
    n_groups = len(infos)
    for rid, entries in handoffs.items():
        tails = [e for e in entries if e[2] % block]
        if not tails:
            continue
        st = conn.hstates[rid]
        boundary = tails[0][2]
        assert all(e[2] == boundary for e in tails) and boundary <= st.req.num_prompt_tokens
        cow = {g: bid for g, bid, _ in tails}
        index = boundary // block
        if any(not info.mamba and index >= len(gs.block_ids)
               for info, gs in zip(infos, st.groups)):
            continue
        keys = [boundary_key(conn, st, g, boundary) for g in range(n_groups)]
        src = [cow[g] if info.mamba else gs.block_ids[index]
               for g, (info, gs) in enumerate(zip(infos, st.groups))]
        offer = offer_in_order(conn, st, keys,
                               {str(g): [f"t{boundary}"] for g in range(n_groups)})
        if offer is None or not offer.keys_to_store:
            continue
        accepted = [keys.index(k) for k in offer.keys_to_store]
        sizes = [0] * n_groups
        for g in accepted:
            sizes[g] = 1
        blocks = [src[g] for g in accepted]
        job = new_store_job(conn, st, offer, blocks, store_jobs, sizes=sizes, window=blocks)
        for bid in blocks:
            conn.fenced.setdefault(bid, set()).add(job.job_id)
