"""Cache mode: one request at a time in arrival order: look up, allocate the whole prompt, free.

The pure prefix-cache model papers and peer tools report (the cache-mode oracle). Each request
is one "step"; its time is its arrival time.
"""

from __future__ import annotations

from kvcore.engine.context import ReplayContext


def run_cache(ctx: ReplayContext) -> None:
    kvm = ctx.kvm
    rec = ctx.recorder
    jsonl = ctx.jsonl
    skipped: list[tuple[int, str]] = []     # (line, why)
    for k, tr in enumerate(ctx.trace.requests):
        ctx.step = k
        ctx.t_ms = tr.arrival_ms
        info = ctx.records[tr.id]
        info.arrival_ms = tr.arrival_ms
        if jsonl is not None:
            jsonl.step, jsonl.t_ms = k, tr.arrival_ms
            jsonl.write("arrive", tr.id, prompt_tokens=tr.prompt_len,
                        output_tokens=tr.output_len)
        if not ctx.admit_or_reject(tr, skipped):
            continue
        req = ctx.make_request(tr, k)
        blocks, hit, req.shared_prefix_boundary = kvm.get_computed_blocks(req)
        rec.req = tr.id
        rec.on_admit_attempt(req)
        new = kvm.allocate_slots(req, req.num_tokens - hit, hit, blocks,
                                 full_sequence_must_fit=True)
        if new is None:   # cannot happen after never_fits, kept as vLLM would answer
            rec.on_admit_failed(req)
            skipped.append((tr.line, "no room in an empty pool"))
            ctx.reject(tr, "no room in an empty pool")
            continue
        kvm.record_prefix_cache_stats(req, hit)
        ctx.count_admission(req, hit, False)
        rec.on_admit(req, hit, False)
        info.first_scheduled_step = k
        req.num_computed_tokens = req.num_tokens
        kvm.free(req)
        info.finish_step = k
        if ctx.vllm is not None:
            ctx.vllm.batch(tr.arrival_ms / 1000.0, kvm.take_events())
        ctx.summary.finished += 1
        ctx.progress(1)
    ctx.step = len(ctx.trace.requests)
    ctx.check_rejections(skipped)
