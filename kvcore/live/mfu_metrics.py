"""vLLM 0.33's MFU metrics (`--enable-mfu-metrics`): perf.py's per-GPU FLOPs, read and write
bytes of every engine step, added to `vllm:estimated_{flops,read_bytes,write_bytes}_per_gpu_total`.

What vLLM does, and what this mirrors:

* `Scheduler.update_from_output(scheduler_output)` calls
  `ModelMetrics.get_step_perf_stats_per_gpu(scheduler_output)` for every batch whose output it
  processes (under async scheduling, the batch queued a step earlier), an empty batch included
  (its weights are still billed); `PerfMetricsProm.observe` adds the three totals unless all
  three are 0. The counts are `kvcore.clock.vllm_count.vllm_counts` of that batch.
* perf.py classifies by where a request sits in the SchedulerOutput: one scheduled from the
  waiting queue this step (`scheduled_new_reqs`: a first admission, or with 0.33's default V2
  model runner a resumption after preemption) is a prefill whatever its tokens; a running one is
  a prefill above 1 token, else a decode. Its context is the computed tokens before the step plus
  the scheduled ones: a request's `num_computed_tokens` right after `schedule()` (kvcli advances
  it there, as vLLM's `_update_after_schedule`). So the counts are taken at schedule time (the
  loop's `watcher`) and added when the batch is processed (its vLLM event batch, one a processed
  batch: `LiveRun.step`).
* Requests inside decode windows come as one-token decodes in aggregate (`plain_decodes`), exact
  for perf.py unless a sliding window clamps each context: then the windows are turned off. The
  decode fast-forward runs many steps in one and is turned off. Both change no result, only speed.
* A replay ends when its last request finishes (`EngineLoop.done`); vLLM's engine then still runs
  the batches left queued and one more step flushing the finished ids (`has_requests`), each of
  no token: their counts are added at the end (`finish`), as vLLM's counter reads once idle.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from kvcore.clock.batch import StepBatch
from kvcore.clock.vllm_count import VllmShape, vllm_counts, vllm_shape
from kvcore.errors import InputError
from kvcore.live.metric_defs import MFU_METRICS

FIELD = "enable_mfu_metrics"
MFU_NAMES = tuple(name for name, *_ in MFU_METRICS)     # flops, read bytes, write bytes


def mfu_shape(cfg: Any) -> VllmShape:
    """What perf.py parses of the replay's model (`cfg`: resolved `ReplayOptions`); refused
    without a model."""
    from kvcore.clock.registry import model_geometry

    if cfg.pipeline_parallel_size > 1:
        # (perf.py bills each GPU its stage's share of the layers, a division kvcore's count
        # does not make: checked against perf.py at one stage only)
        raise InputError("not with --pipeline-parallel-size: vLLM's perf.py divides the layers "
                         "among the stages, which kvcli's count does not", field=FIELD)
    g = model_geometry(cfg.model, cfg.model_config)
    if g is None:
        raise InputError("needs a model (--model or --model-config): vLLM's perf.py counts "
                         "nothing without one", field=FIELD)
    return vllm_shape(g, tp=cfg.tp, kv_cache_dtype=cfg.kv_cache_dtype)


def step_batch(out: Any) -> StepBatch:
    """perf.py's batch of a SchedulerOutput right after `schedule()`."""
    nst = out.num_scheduled_tokens
    admitted = out.admitted
    b = StepBatch()
    for req in out.eager:
        rid = req.request_id
        n = nst[rid]
        b.requests.append((n, req.num_computed_tokens, rid in admitted or n > 1))
    b.agg_decodes = out.plain_decodes
    b.agg_context = out.plain_context
    return b


def totals(shape: VllmShape, batch: StepBatch) -> tuple[int, int, int]:
    c = vllm_counts(shape, batch)
    return c.num_flops, c.num_read_bytes, c.num_write_bytes


class MfuSteps:
    """One engine's MFU counters: the loop's `watcher` (counts at schedule time), `processed`
    after each processed batch, `finish` at the end of the run."""

    def __init__(self, shape: VllmShape, counters: tuple[Any, Any, Any], loop: Any) -> None:
        self.shape = shape
        self.counters = counters        # flops, read bytes, write bytes: the engine's children
        self.loop = loop
        self.queued: deque[tuple[int, int, int]] = deque()    # scheduled, not yet processed
        loop.watcher = self
        loop.fast_forward = False
        if shape.num_swa_layers and shape.sliding_window is not None:
            loop.decode_windows = False     # (perf.py clamps each decode's context)
            loop.sched.windows = None

    def scheduled(self, step: int, out: Any) -> None:
        self.queued.append(totals(self.shape, step_batch(out)))

    def processed(self) -> None:
        if self.queued:
            self._observe(self.queued.popleft())

    def _observe(self, counts: tuple[int, int, int]) -> None:
        if any(counts):             # (PerfMetricsProm.observe: a step of all 0 is not observed)
            for counter, value in zip(self.counters, counts, strict=True):
                counter.inc(value)

    def finish(self) -> None:
        """A run that ended by finishing its requests: the batches vLLM still processes."""
        if not self.loop.done():
            return                  # (interrupted, or stopped at max_steps)
        while self.queued:
            self.processed()
        if self.loop.sched.has_requests():
            self._observe(totals(self.shape, StepBatch()))
