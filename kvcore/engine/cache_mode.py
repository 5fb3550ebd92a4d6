"""Cache mode: one request at a time in arrival order: look up, allocate the whole prompt, free.

The pure prefix-cache model papers and peer tools report (the cache-mode oracle). Each request
is one "step"; its time is its arrival time.
"""

from __future__ import annotations

from kvcore.engine.context import ReplayContext
from kvcore.engine.read_ahead import read_ahead
from kvcore.engine.scheduler_offload import connector_hit
from kvcore.offload.completions import request_finished
from kvcore.offload.stores import build_connector_meta
from kvcore.offload.tier import OffloadTier
from kvcore.traces import TraceRequest


def run_cache(ctx: ReplayContext) -> None:
    run = CacheRun(ctx)
    k = 0
    for tr in read_ahead(ctx.order, lambda: ctx.prompt_hashes):
        run.one(tr, k)
        k += 1
    run.close(k)


class CacheRun:
    """Cache mode request by request: `one(tr, k)` runs the k-th request (`kvcore.cluster`
    calls it as its router hands each replica a request), `close(n)` ends the run."""

    def __init__(self, ctx: ReplayContext) -> None:
        self.ctx = ctx
        self.tier = ctx.open_tier()
        self.skipped: list[tuple[int, str]] = []     # (line, why)

    def one(self, tr: TraceRequest, k: int) -> None:
        ctx = self.ctx
        kvm = ctx.kvm
        rec = ctx.recorder
        jsonl = ctx.jsonl
        tier = self.tier
        skipped = self.skipped
        ctx.step = k
        ctx.t_ms = tr.arrival_ms
        # Each request is a step of its own: a Mamba state the last one cached is written by
        # now, so a hit on it is not deferred (the same-step refusal would reject it here).
        kvm.new_step_starts()
        info = ctx.book.arrived(tr, k)
        info.arrival_ms = tr.arrival_ms
        if jsonl is not None:
            jsonl.step, jsonl.t_ms = k, tr.arrival_ms
            jsonl.write("arrive", tr.id, prompt_tokens=tr.prompt_len,
                        output_tokens=tr.output_len)
        if not ctx.admit_or_reject(tr, skipped):
            return
        req = ctx.make_request(tr, k)
        blocks, hit, req.shared_prefix_boundary = kvm.get_computed_blocks(req)
        rec.req = tr.id
        rec.on_admit_attempt(req)
        ext = 0
        if tier is not None:
            tier.conn.on_new_request(req)
            # (a GPU hit inside a block is shown to the tier floored, as engine mode does)
            found, _, blocks, hit = connector_hit(kvm, tier.conn, req, blocks, hit)
            ext = found or 0
            tier.conn.rec.lookups[tr.id] = [hit, ext]
        new = kvm.allocate_slots(req, req.num_tokens - hit - ext, hit, blocks,
                                 num_external_computed_tokens=ext,
                                 full_sequence_must_fit=True)
        if new is None:
            # never_fits is a lower bound: a windowed group holds its whole prompt when none
            # of it is computed yet (chunked local at 62 tokens: all 16 blocks), so it happens
            rec.on_admit_failed(req)
            if tier is not None:    # its lookup and state go with it, as a finished request's
                request_finished(tier.conn, req)
                _last_offer(tier, tr.id)
            skipped.append((tr.line, "no room in an empty pool"))
            ctx.reject(tr, "no room in an empty pool")
            return
        if kvm.coordinator.partial_hits:
            # the step's copy-on-writes ran with it: their held ends go, as after a schedule()
            kvm.block_pool.free_blocks(kvm.coordinator.take_cow_blocks())
        kvm.record_prefix_cache_stats(req, hit)
        if tier is not None and req.num_tokens > hit:
            # vLLM's connector prefix-cache stats, as engine mode's admission records them
            tier.stats.record(req.num_tokens - hit, ext, False)
        ctx.count_admission(req, hit, False)
        rec.on_admit(req, hit, False)
        info.first_scheduled_step = k
        if tier is not None:
            _through_the_tier(tier, req, hit, ext, ctx, k)
        req.num_computed_tokens = req.num_tokens
        if tier is not None:
            request_finished(tier.conn, req)
        kvm.free(req)
        if tier is not None:
            _last_offer(tier, tr.id)
        info.finish_step = k
        if ctx.vllm is not None:
            ctx.vllm.batch(tr.arrival_ms / 1000.0, ctx.take_kv_events())
        ctx.finished(tr)

    def close(self, n: int) -> None:
        """After the last of `n` requests."""
        self.ctx.step = n
        self.ctx.check_rejections(self.skipped)


def _last_offer(tier: OffloadTier, rid: str) -> None:
    """A finished (or refused) request's last offer and its recency commit, before the next."""
    tier.complete_now(build_connector_meta(tier.conn, {}, [], set(), [], [rid]))
    tier.end_step(None, None, None, None, None)


def _through_the_tier(tier: OffloadTier, req, hit: int, ext: int, ctx: ReplayContext,
                      k: int) -> None:
    """The request's load (``ext`` tokens past the GPU hit) and its store offer, both done at
    once: cache mode has no clock and no other request in between."""
    conn = tier.conn
    if ext:     # the allocation cached the loaded blocks already: vLLM's sync-load path
        conn.sync_loads.add(req.request_id)
    conn.update_state_after_alloc(req, ext)
    tier.note_lookups(ctx.records, k)
    req.num_computed_tokens = hit + ext
    n = req.num_tokens - hit - ext
    tier.complete_now(build_connector_meta(conn, {req.request_id: n}, [req], {req.request_id},
                                           [], []))
