"""Engine mode with a batch queue: vLLM 0.33's `EngineCore.step_with_batch_queue`, under async
scheduling and with pipeline parallelism.

A step is one engine-loop iteration. The queue holds at most `depth` scheduled batches (vLLM's
`max_concurrent_batches`: 2 under async scheduling; with pipeline parallelism PP, or PP + 1
under async scheduling; newest on the left, the oldest popped from the right). Each step:
schedule batch k if the scheduler has requests, and queue it; then, unless the queue is still
short of `depth` and (batch k has tokens or requests remain) -- the engine's early return --,
process the oldest batch's output (at steady state batch k - depth + 1's). With the
synchronous Scheduler (pipeline parallelism without async scheduling) a request whose batch is
in flight has no token to schedule until its output is processed. A step with nothing to
schedule but a batch queued only processes it (the drain). So a request finishes, frees its
blocks and has its decode-completed block cached one step later than under sync, and vLLM's KV
events (published by output processing) come with the step that processes the batch.
With speculative decoding under the synchronous Scheduler, the drafts of the batch just
scheduled come back at the end of the same step (vLLM's `post_step`), before its output.

Time: the GPU runs the queued batches back to back, each for its clock cost, from when it is
scheduled or when the one before ends. With pipeline parallelism the batch passes its stages in
turn, each stage a 1/PP share of the batch's cost (an even split of the layers; the activations'
hand-over between stages is not counted), a stage starting when the batch leaves the one before
and when that stage is free: one batch ends every stage time at steady state, each after PP.
A step that processes a batch ends when that batch ends (the engine blocks on it), so the
batch's tokens are stamped with the end of their own forward pass; a step that returns early
takes no time (the next schedules at once, while the GPU runs), except under sync PP with
drafts: `post_step` waits for the last stage's drafts of the batch it just scheduled, so no two
batches share the pipeline (tests/data/sched_spec_pp/DESIGN.md).
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

import orjson

from kvcore.engine.batch_time import batch_ms
from kvcore.engine.context import ReplayContext
from kvcore.engine.engine_loop import EngineLoop
from kvcore.engine.replay_pool import concurrent_batches
from kvcore.engine.scheduler_io import SchedulerOutput
from kvcore.engine.spec_decode import propose


class Batch(NamedTuple):
    step: int                   # the step that scheduled it
    out: SchedulerOutput
    end_ms: float               # when the GPU finishes it (its output can be processed)
    # with the CPU tier: the worker ran the batch's transfers when it was scheduled; their
    # reports ride with its output (jobs reported, requests whose load finished)
    transfers: tuple[list[int], set[str]] | None = None


class AsyncEngineLoop(EngineLoop):
    def __init__(self, ctx: ReplayContext) -> None:
        super().__init__(ctx)
        self.batches: deque[Batch] = deque()
        self.depth = concurrent_batches(ctx.cfg)
        # when each pipeline stage finishes the batches queued so far (one stage: the GPU)
        self.stage_free_ms = [0.0] * ctx.cfg.pipeline_parallel_size
        # the runner's drafts come back to the scheduler (sync scheduling; under async the
        # AsyncScheduler gives placeholders itself)
        self.propose_after = bool(self.sched.num_spec) and not ctx.cfg.async_scheduling

    def done(self) -> bool:
        # The oracle's stop: what is still queued schedules nothing (the engine would process
        # it and run a flush schedule(); neither changes the cache). With the CPU tier the
        # engine runs until it has no work at all (its transfers ride with the batches).
        if self.tier is not None:
            return super().done() and not self.batches
        return super().done() and not any(b.out.num_scheduled_tokens for b in self.batches)

    def has_work(self) -> bool:
        return self.sched.has_requests() or bool(self.batches)      # EngineCore.has_work

    def step(self) -> None:
        ctx = self.ctx
        sched = self.sched
        jsonl = ctx.jsonl
        pool = ctx.kvm.block_pool
        if jsonl is not None:
            jsonl.step, jsonl.t_ms = ctx.step, ctx.t_ms
        called = sched.has_requests()
        so = None
        nst: dict[str, int] = {}
        tier = self.tier
        if called:
            so = sched.schedule()
            if self.watcher is not None:
                self.watcher.scheduled(ctx.step, so)
            nst = so.num_scheduled_tokens
        free_after_schedule = pool.get_num_free_blocks()
        start = ctx.t_ms
        if so is not None:
            # The GPU runs the batches one after another: this one starts when it is scheduled
            # or when the one before it ends, whichever is later (each pipeline stage in turn).
            stages = self.stage_free_ms
            ms = batch_ms(ctx, so)
            # (an EAGLE / MTP drafter runs on the last stage only: vLLM builds its speculator
            # on the last PP rank, v1/worker/gpu/model_runner.py:298-305)
            tail = min(getattr(ctx.cost, "last_draft_ms", 0.0), ms) if len(stages) > 1 else 0.0
            share = (ms - tail) / len(stages)
            end_ms = start
            for s, free in enumerate(stages):
                end_ms = stages[s] = max(end_ms, free) + share
            end_ms = stages[-1] = end_ms + tail
            transfers = None
            if tier is not None:
                transfers = tier.scheduled(ctx, so, end_ms)
            self.batches.appendleft(Batch(ctx.step, so, end_ms, transfers))
        processed = None
        finished: list[str] = []
        reports = None
        process = so is None or not (len(self.batches) < self.depth
                                     and (so.total_num_scheduled_tokens or sched.has_requests()))
        # The step ends when the batch it processes is done on the GPU (the engine blocks on
        # it), its tokens reaching their requests then; a step that returns early, without
        # processing, takes no time: the next one schedules while the GPU runs this batch.
        t_end = max(start, self.batches[-1].end_ms) if process else start
        t_next = t_end
        if self.propose_after and so is not None and so.total_num_scheduled_tokens:
            # Sync PP with drafts: vLLM's post_step waits for this batch's drafts, which the
            # last stage gives once it has run it (no two batches overlap in the stages then);
            # the processed batch's tokens went out before.
            t_next = max(t_end, self.batches[0].end_ms)
        self.usage_time += (self.num_usable - free_after_schedule) * (t_next - start)
        if jsonl is not None:
            jsonl.t_ms = t_end
        if process:
            batch = self.batches.pop()
            processed = batch.step
            finished = sched.update_from_output(batch.out, self.sample)
            self.account_output(batch.out, finished, t_end)
            if tier is not None and batch.transfers is not None:
                reports = batch.transfers
                tier.deliver(sched, *reports)
            if ctx.vllm is not None:    # vLLM publishes a step's events with its output
                ctx.vllm.batch(t_end / 1000.0, ctx.take_kv_events())
        if self.propose_after and so is not None and so.total_num_scheduled_tokens:
            # Sync PP: vLLM's post_step takes the drafts of the batch just scheduled (the
            # last stage answers once it sampled it), before that batch's output is processed
            # (tests/data/sched_spec_pp/DESIGN.md).
            propose(sched, so)
        preempted = so.preempted if so is not None else []
        line = None
        if ctx.steps_out is not None:
            line = {
                "step": ctx.step, "t_ms": round(t_end, 6), "scheduled": nst,
                "admitted": so.admitted if so is not None else {}, "preempted": preempted,
                "finished": finished, "num_free_blocks": pool.get_num_free_blocks(),
                "num_free_blocks_after_schedule": free_after_schedule,
                "processed": processed, "schedule_called": called}
            if so is not None and so.spec:
                line["drafts"] = so.spec        # speculative decoding's, verified this step
        if tier is not None:
            done, recv = reports if reports is not None else (None, None)
            tier.end_step(sched, so.kv_meta if so is not None else None, done, recv, line)
        if line is not None and ctx.steps_out is not None:
            ctx.steps_out.write(orjson.dumps(line) + b"\n")
        self.stall_guard(bool(nst or preempted or finished))
        ctx.t_ms = t_next
        ctx.step += 1

    def account_output(self, out: SchedulerOutput, finished: list[str], t_end: float) -> None:
        """First-token and finish times: a token reaches its request when its batch's output
        is processed (the end of this step: when the GPU finished that batch)."""
        records = self.ctx.records
        listener = self.listener
        sampling = out.sampling
        # in schedule order, as vLLM's output processing goes: a set's order follows the ids'
        # string hashes, so PYTHONHASHSEED moved the `--metrics` TTFT sum's last bits
        for req in out.eager:
            rid = req.request_id
            if rid not in sampling:
                continue
            rec = records.get(rid)
            if rec is None:
                continue    # finished by an earlier batch (its drafts accepted past the end)
            if rec.first_token_ms is None:
                rec.first_token_ms = t_end
                if listener is not None:
                    listener.first_token(rid, t_end)
        super().account([], finished, t_end)
