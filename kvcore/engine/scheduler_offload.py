"""(B) of `Scheduler.schedule()` with a KV connector (vLLM 0.33's CPU offloading tier).

The waiting scan as vLLM runs it with `OffloadingConnector` (`kvcore.offload`):

* Two queues: requests holding KV blocks (``kv_holding``: those waiting for an async load) are
  drained before the others. A request the scan cannot take now is skipped: set aside and put
  back at the front of its queue after the scan, while the scan goes on with the next one.
* A request waiting for its load is skipped until the worker reported it; then its loaded
  blocks enter the GPU prefix cache (a full-prompt hit keeps one token to recompute) and it is
  admitted like any other, with nothing to look up.
* A request with no computed tokens looks up the GPU prefix cache, then the connector extends
  the hit by whole CPU chunks (`get_num_new_matched_tokens`); "not yet" skips it.
* An async load is admitted with 0 tokens: it must fit the whole prompt plus what the other
  in-flight prefills still need (``reserved_blocks``), allocates blocks for the loaded tokens
  only, takes no budget and no seat, and waits (``WAITING_FOR_REMOTE_KVS``). A refused
  allocation stops the scan, as without a connector.
* External hits are counted at admission (vLLM's ``connector_prefix_cache_stats``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvcore.engine.scheduler_waiting import admission_tokens
from kvcore.engine.spec_decode import check_padding, note_drafts_needed
from kvcore.offload.completions import request_finished
from kvcore.request import Request, RequestStatus
from kvcore.specs import MambaSpec, cdiv

if TYPE_CHECKING:
    from kvcore.engine.scheduler import Scheduler
    from kvcore.engine.scheduler_io import SchedulerOutput
    from kvcore.offload.connector import OffloadingConnector


def schedule_waiting_with_connector(sched: Scheduler, out: SchedulerOutput, budget: int,
                                    threshold: int, admitted_full: set[str]) -> int:
    """Admit waiting requests into ``out``; the budget left. ``admitted_full`` gets the
    requests scheduled with their whole block table."""
    cfg = sched.config
    kvm = sched.kv_cache_manager
    # (typed: the compiled build calls it natively, not by a generic call each step)
    conn: OffloadingConnector = sched.connector
    obs = sched.observer
    tracer = sched.tracer
    running = sched.running
    nst = out.num_scheduled_tokens
    skipped_holding: list[Any] = []
    skipped_waiting: list[Any] = []
    holding, waiting = sched.kv_holding, sched.waiting
    spec = sched.num_spec
    any_running = bool(nst)     # (so far only the running loop's requests are in it)

    while budget > 0:
        queue = holding if len(holding) else waiting
        if not len(queue) or len(running) >= sched.max_num_active:
            break
        req = queue.peek()
        if req.__class__ is not Request:
            req = req.build()
            queue.replace_head(req)
            sched.requests[req.request_id] = req
            conn.on_new_request(req)
        rid = req.request_id
        if req.status == RequestStatus.WAITING_FOR_REMOTE_KVS:
            if rid not in sched.finished_recving:
                _skip(queue, skipped_holding, skipped_waiting)
                continue
            _promote(sched, req)
        ext = 0
        load_async = False
        queries = hits = 0
        looked_up = req.num_computed_tokens == 0
        if looked_up:
            hit_blocks, num_hit, req.shared_prefix_boundary = kvm.get_computed_blocks(req)
            found, load_async, hit_blocks, num_hit = connector_hit(kvm, conn, req, hit_blocks,
                                                                   num_hit)
            if found is None:
                _skip(queue, skipped_holding, skipped_waiting)
                continue
            ext = found
            queries = req.num_tokens - num_hit
            hits = ext
            computed = num_hit + ext
        else:
            hit_blocks, num_hit = None, 0
            computed = req.num_computed_tokens
        n, padded = 0, False
        if not load_async:
            taken = admission_tokens(sched, req, computed, budget, threshold, any_running)
            if taken is None:
                sched.blocked = (req, False, budget)
                break
            n, padded = taken
        # An async load reserves what the in-flight prefills still need plus one spec decode
        # step, and takes its lookahead slots only once loaded (scheduler.py:1400-1431).
        reserved = _reserved_blocks(sched) + _spec_step_blocks(sched) if load_async else 0
        if tracer is not None:
            tracer.req = rid
        if obs is not None and looked_up:
            # (a request promoted after its load was admitted, with its event, at the lookup)
            obs.on_admit_attempt(req)
        new_blocks = kvm.allocate_slots(
            req, n, num_new_computed_tokens=num_hit, new_computed_blocks=hit_blocks,
            num_lookahead_tokens=0 if load_async else sched.lookahead,
            num_external_computed_tokens=ext, delay_cache_blocks=load_async,
            full_sequence_must_fit=cfg.scheduler_reserve_full_isl, reserved_blocks=reserved,
            has_scheduled_reqs=bool(running))
        if new_blocks is None:
            if obs is not None and looked_up:
                obs.on_admit_failed(req)
            sched.blocked = (req, True, budget)
            break
        if padded:
            check_padding(req, n, spec, threshold)
        host = conn.update_state_after_alloc(req, ext)
        if queries:
            sched.connector_stats.record(queries, hits, req.num_preemptions > 0, host)
        resumed = req.status == RequestStatus.PREEMPTED
        if looked_up:
            # the GPU hit statistics at the admission that looked up (an async load's too)
            kvm.record_prefix_cache_stats(req, num_hit)
            conn.rec.lookups[rid] = [num_hit, ext]
            if req.num_cached_tokens < 0:
                req.num_cached_tokens = computed
            if obs is not None:
                obs.on_admit(req, num_hit, resumed)
        if load_async:
            req.status = RequestStatus.WAITING_FOR_REMOTE_KVS
            req.num_computed_tokens = computed
            sched.inflight_prefills.add(req)
            _skip(queue, skipped_holding, skipped_waiting)
            continue
        queue.pop()
        running.append(req)
        req.status = RequestStatus.RUNNING
        req.num_computed_tokens = computed
        nst[rid] = n
        if spec:
            note_drafts_needed(req, computed, n, out)
        if padded:
            out.spec[rid] = spec
        out.eager.append(req)
        out.admitted[rid] = computed
        admitted_full.add(rid)
        budget -= n
        if computed + n < req.num_tokens:
            sched.inflight_prefills.add(req)
    for i in range(len(skipped_holding) - 1, -1, -1):
        holding.prepend(skipped_holding[i])
    for i in range(len(skipped_waiting) - 1, -1, -1):
        waiting.prepend(skipped_waiting[i])
    return budget


def connector_finished(sched: Scheduler, req: Request) -> None:
    """vLLM's `_connector_finished`: the blocks out of the window are freed first (on the
    processed tokens; a no-op for full attention, it matters with windowed groups), then the
    table goes to the connector; the finish is noted in order."""
    sched.inflight_prefills.discard(req)
    sched.kv_cache_manager.remove_skipped_blocks(
        req.request_id, max(0, req.num_computed_tokens - req.num_in_flight_tokens),
        req.num_prompt_tokens)
    request_finished(sched.connector, req)
    sched.finished_order.append(req.request_id)


def connector_hit(kvm: Any, conn: OffloadingConnector, req: Request, hits: Any, num_hit: int
                  ) -> tuple[int | None, bool, Any, int]:
    """The connector's lookup past the GPU hit: (tokens it loads or None for "not yet", async,
    the GPU hit's blocks and tokens). It sees the GPU hit floored to the block (a partial hash
    hit's tail inside a block, `--prefix-match-unit`); a longer tier hit drops that tail (vLLM's
    `truncate_computed_blocks`: each group's hit up to the floor, a Mamba group's shorter one
    kept), a shorter one keeps it and loads nothing (vLLM's scheduler.py:1130-1186)."""
    tail = num_hit % kvm.coordinator.scheduler_block_size
    found, load_async = conn.get_num_new_matched_tokens(req, num_hit - tail)
    if not tail or found is None:
        return found, load_async, hits, num_hit
    if found <= tail:
        return 0, False, hits, num_hit
    from kvcore.kv_cache_blocks import KVCacheBlocks

    num_hit -= tail
    hits = KVCacheBlocks(tuple(list(g[:num_hit // m.block_size]) for g, m in
                               zip(hits.blocks, kvm.coordinator.single_type_managers)))
    return found, load_async, hits, num_hit


def _skip(queue: Any, holding: list[Any], waiting: list[Any]) -> None:
    """Set the head aside for this step (it goes back to the front of its queue after)."""
    req = queue.pop()
    (holding if _holds_blocks(req) else waiting).append(req)


def _holds_blocks(req: Any) -> bool:
    return req.num_computed_tokens > 0 or req.status == RequestStatus.WAITING_FOR_REMOTE_KVS


def _promote(sched: Scheduler, req: Request) -> None:
    """Its load finished: cache the loaded blocks; a full-prompt hit recomputes one token."""
    if sched.tracer is not None:
        sched.tracer.req = req.request_id        # the block events are this request's
    sched.kv_cache_manager.cache_blocks(req, req.num_computed_tokens)
    if req.num_computed_tokens == req.num_tokens:
        req.num_computed_tokens = req.num_tokens - 1
        if req.num_computed_tokens == 0:    # (scheduler.py:3515: T - 1 = 0 computed tokens)
            sched.reloaded = req.request_id
    sched.finished_recving.remove(req.request_id)
    req.status = RequestStatus.PREEMPTED if req.num_preemptions else RequestStatus.WAITING


def _spec_step_blocks(sched: Scheduler) -> int:
    """vLLM's `_spec_decode_step_blocks`: one decode step's 1 + K + lookahead slots in every
    group but Mamba's (its managers count their speculative state blocks themselves)."""
    if not sched.num_spec:
        return 0
    n = 1 + sched.num_spec + sched.lookahead
    return sum(cdiv(n, m.block_size) for m in sched.kv_cache_manager.coordinator
               .single_type_managers if not isinstance(m.kv_cache_spec, MambaSpec))


def _reserved_blocks(sched: Scheduler) -> int:
    """Blocks the in-flight prefills still need to hold their whole sequence (vLLM's
    `_request_remaining_blocks`, scheduler.py:3404-3420)."""
    kvm = sched.kv_cache_manager
    coord = kvm.coordinator
    empty = kvm.empty_kv_cache_blocks.blocks
    total = 0
    # (with drafts each also needs its decode step's 1 + K + lookahead slots; an align-mode
    # Mamba group counts the sequence alone, num_tokens_main_model)
    extra = 1 + sched.num_spec + sched.lookahead if sched.num_spec else 0
    max_len = sched.config.max_model_len
    for req in sched.inflight_prefills:
        main = min(req.num_tokens, max_len)
        total += coord.get_num_blocks_to_allocate(
            req.request_id, main + extra, empty, 0, req.num_computed_tokens,
            req.num_computed_tokens, main, True, max(req.num_prompt_tokens, req.num_tokens - 1))
    return total
