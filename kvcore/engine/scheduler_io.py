"""What goes into and out of the scheduler (`kvcore.engine.scheduler`): its config (vLLM
0.33's SchedulerConfig knobs), one step's plan (`SchedulerOutput`), the observer that hears
request-level events, and the lazily built request a waiting queue may hold."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from kvcore.request import Request
from kvcore.sizing_context import DEFAULT_MAX_NUM_BATCHED_TOKENS

NO_MODEL_LEN_LIMIT = 1 << 40


def max_concurrent_batches(async_scheduling: bool, pp: int = 1) -> int:
    """vLLM 0.33's `VllmConfig.max_concurrent_batches`, the engine's batch queue (a queue when
    above 1): async scheduling 2, or with pipeline parallelism PP + 1 (the V2 model runner);
    without it PP."""
    if async_scheduling:
        return 2 if pp == 1 else pp + 1
    return pp


@dataclass(slots=True)
class SchedulerConfig:
    """vLLM's SchedulerConfig knobs that matter here (defaults = vLLM 0.33's class defaults)."""

    max_num_seqs: int = 128
    max_num_batched_tokens: int = DEFAULT_MAX_NUM_BATCHED_TOKENS
    max_model_len: int = NO_MODEL_LEN_LIMIT
    long_prefill_token_threshold: int = 0
    long_prefill_token_threshold_adaptive: bool = False
    enable_chunked_prefill: bool = True
    policy: str = "fcfs"
    scheduler_reserve_full_isl: bool = True
    max_num_active_seqs: int | None = None
    # vLLM's AsyncScheduler: one sampled-token placeholder per scheduled non-chunk request
    # (the engine loop runs the batch queue: `kvcore.engine.async_loop`).
    async_scheduling: bool = False
    # vLLM's pipeline-parallel size: under async scheduling (the V2 model runner) a request
    # decodes at most every PP-th schedule() (`Scheduler.decode_stagger`)
    pipeline_parallel_size: int = 1
    # vLLM's speculative decoding, method "ngram" (`kvcore.engine.spec_decode`): the drafts a
    # decode step verifies (0: off). N-gram drafting reserves no lookahead slots and no draft
    # slots in the budget.
    num_speculative_tokens: int = 0
    # the method: with EAGLE every allocation reserves K lookahead slots (vLLM's
    # num_lookahead_tokens: its drafter writes KV K positions past the scheduled tokens)
    spec_method: str = "ngram"


@dataclass(slots=True)
class SchedulerOutput:
    # Request id -> tokens scheduled this step; running requests first, then admitted ones.
    num_scheduled_tokens: dict[str, int] = field(default_factory=dict)
    # Admitted from waiting this step (new or resumed): id -> tokens already computed (the hit).
    admitted: dict[str, int] = field(default_factory=dict)
    preempted: list[str] = field(default_factory=list)   # in preemption order
    total_num_scheduled_tokens: int = 0
    # The requests that sample a token in this batch (not a prefill chunk at schedule time:
    # under async, exactly those given a placeholder); fixed when the batch is scheduled.
    sampling: set[str] = field(default_factory=set)
    # The requests scheduled in full, in schedule order: all but those inside a decode window
    # (`kvcore.engine.decode_windows`), which are `plain_decodes` one-token decodes.
    eager: list[Request] = field(default_factory=list)
    plain_decodes: int = 0
    # the sum of their contexts after this step (computed tokens, the new one included)
    plain_context: int = 0
    # Async: requests a window's catch-up handed back to this batch (appended to `eager`, which
    # its update then puts back in schedule order).
    returned: bool = False
    # With a KV connector (CPU offloading): the step's transfers for the worker
    # (`kvcore.offload.connector.ConnectorMeta`).
    kv_meta: Any = None
    # Speculative decoding: request id -> the drafts this batch verifies (vLLM's
    # `scheduled_spec_decode_tokens`, by count). An admitted request's are the placeholders a
    # one-token admission was padded with (the only drafts admission gives), which no target
    # token matches.
    spec: dict[str, int] = field(default_factory=dict)
    # Whether some request of the batch can verify the drafts proposed after it (vLLM's
    # `_drafts_unused`, or-ed over the step, requests later preempted included): an EAGLE
    # runner proposes none after a batch where none can (`skip_drafts`).
    drafts_needed: bool = False


class SchedulerObserver(Protocol):
    """Hears the request-level events, each before the block events it causes.

    * `on_admit_attempt`: a waiting request's allocation is about to be tried; the block events
      that follow belong to its admission, which is not decided yet: hold them.
    * `on_admit` (``hit_tokens`` its prefix-cache hit, ``resumed`` whether it was preempted) or
      `on_admit_failed` (the pool refused it) then ends that attempt.
    * `on_preempt`: a running request is about to lose its blocks, ``num_computed_tokens`` as
      it had them.
    * `on_finish`: a finished request is about to release its blocks.
    """

    def on_admit_attempt(self, req: Request) -> None: ...
    def on_admit(self, req: Request, hit_tokens: int, resumed: bool) -> None: ...
    def on_admit_failed(self, req: Request) -> None: ...
    def on_preempt(self, req: Request, num_computed_tokens: int) -> None: ...
    def on_finish(self, req: Request) -> None: ...


class LazyRequest(Protocol):
    """A waiting request not built yet: a long queue would otherwise hold every prompt's tokens
    and block hashes. It has the queue keys and builds the `Request` when it reaches the head."""

    request_id: str
    priority: int
    arrival_time: float

    def build(self) -> Request: ...
