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
* EAGLE's proof (`_eagle_proof_margins`, 603-623): a flagged attention group is keyed one
  hash block past the boundary (its fine lookup matches that far, then drops it), in lookups,
  stores and loads; the lookup then searches two blocks past the complete hit, up to the
  request's hashes less the margin (1083-1094); a store needs the proof computed by the end of
  the step and is made only for a request that loaded from the tier (1648-1682: the others
  keep their tail in the GPU prefix cache).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvcore.errors import tails_in_one_step
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


def proof_margins(flagged: list[bool], hash_block: int, block: int) -> list[int]:
    """Each group's partial-tail key offset (vLLM's `eagle_proof_margin`: a flagged attention
    group's fine lookup matches one hash block past a hit; 0 for the others). ``flagged``: an
    EAGLE group that is not a Mamba group, whose state comes from the copy-on-write."""
    margin = min(block, hash_block)
    return [margin if f else 0 for f in flagged]


def boundary_key(conn: HybridConnector, st: HybridState, group: int, boundary: int) -> bytes:
    """A group's key at ``boundary`` (vLLM's `_make_boundary_key`: the position noted too),
    a flagged group's one proof margin past it."""
    tokens = boundary + conn.proof_margins[group]
    key = make_key(st.req.block_hashes[tokens // conn.hash_block - 1], group)
    st.ctx.set_position(key, tokens)
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
    margin = conn.max_proof_margin
    # (a tail carries its own proof: it may lie in the block past the chunk EAGLE popped)
    top = min(st.req.num_prompt_tokens - 1, end + (2 if margin else 1) * block - 1)
    if margin:
        top = min(top, len(st.req.block_hashes) * hbs - margin)
    top = top // hbs * hbs
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
                    store_jobs: dict[int, Job], scheduled: dict[str, int]) -> None:
    """One `prepare_store` per request with an off-block hand-off: every group's key at its
    boundary (with an EAGLE proof margin, only for a request that loaded from the tier and
    once this step computes the proof)."""
    margin = conn.max_proof_margin
    block = conn.partial_block
    infos = conn.infos
    n_groups = len(infos)
    for rid, entries in handoffs.items():
        tails = [e for e in entries if e[2] % block]
        if not tails:
            continue
        st = conn.hstates[rid]
        if margin and not st.loaded:
            continue
        req = st.req
        boundaries = sorted({e[2] for e in tails})
        if len(boundaries) > 1:     # (the junction's copy-on-write beside the prompt tail's)
            raise tails_in_one_step(rid, boundaries)
        boundary = boundaries[0]
        assert boundary <= req.num_prompt_tokens
        if margin and boundary + margin > min(req.num_computed_tokens + scheduled.get(rid, 0),
                                              req.num_prompt_tokens):
            continue    # (the hand-off is not offered again)
        cow = {g: bid for g, bid, _ in tails}
        index = boundary // block
        if any(not info.mamba and index >= len(gs.block_ids)
               for info, gs in zip(infos, st.groups)):
            continue
        keys = [boundary_key(conn, st, g, boundary) for g in range(n_groups)]
        src = [cow[g] if info.mamba else gs.block_ids[index]
               for g, (info, gs) in enumerate(zip(infos, st.groups))]
        offer = offer_in_order(conn, st, keys,
                               {str(g): [offer_label(conn, st, g, keys[g], boundary + m)]
                                for g, m in enumerate(conn.proof_margins)})
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


def offer_label(conn: HybridConnector, st: HybridState, group: int, key: bytes,
                tokens: int) -> int | str:
    """A key in an offer, as the oracle writes it: its index among the group's keyed chunks
    (vLLM's `offload_keys`) when it is one, else "tN". A key at a chunk's end is not always
    keyed yet: vLLM extends `offload_keys` only for the requests a step schedules and at a
    request's finish, so a Mamba state handed off on a step that does not schedule its request
    (oj278: the state at 96 on the step its request's finish is seen, before `request_finished`
    keys it) is offered as "t96"; the key and the job are the same either way."""
    keys, tpc = st.groups[group].keys, conn.tpcs[group]     # (the group's own chunk)
    index = tokens // tpc - 1
    if not tokens % tpc and index < len(keys) and keys[index] == key:
        return index
    return f"t{tokens}"
