"""What a replay reports: `ReplaySummary` (the JSON keys are documented in docs/replay.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(slots=True)
class ReplaySummary:
    trace: str
    format: str
    mode: str
    # False for a trace of prompt lengths only (lengths, Azure CSV): every prompt is unique
    # content, so the hit rate is 0 by construction, not a finding about the cache
    prompt_content: bool = True
    requests: int = 0                 # every request of the trace
    rejected: int = 0                 # never admitted (could never fit; skipped)
    finished: int = 0
    prompt_tokens: int = 0            # admitted requests past the warm-up, at first admission
    hit_tokens: int = 0               # their prefix-cache hit tokens at first admission
    hit_rate: float = 0.0             # hit_tokens / prompt_tokens
    request_hit_rate_mean: float = 0.0
    counted_requests: int = 0         # requests in the two sums above
    warmup_requests: int = 0          # left out by the warm-up
    preempted_admissions: int = 0     # re-admissions after preemption (vLLM's preempted_*)
    preempted_prompt_tokens: int = 0
    preempted_hit_tokens: int = 0
    preemptions: int = 0
    recomputed_tokens: int = 0        # computed tokens thrown away by preemptions
    evictions: int = 0                # cached hashes dropped because their block was reused
    peak_usage: float = 0.0           # max fraction of usable blocks held (after every allocation)
    mean_usage: float | None = None   # engine mode: time-weighted mean after each step's scheduling
    num_blocks: int = 0
    block_size: int = 0
    # the pool's KV cache groups, as the event header's `groups`: [{type, block_size,
    # sliding_window}] (one full-attention group without a model)
    groups: list[dict] = field(default_factory=list)
    num_free_blocks_end: int = 0      # the pool's free count at the end (num_blocks - 1 when done)
    steps: int = 0
    sim_time_s: float = 0.0
    wall_time_s: float = 0.0
    events: int = 0                   # lines written to our event stream (0 without one)
    interrupted: bool = False
    config: dict = field(default_factory=dict)
    # engine mode, arrivals by timestamp: trace arrival to the start of the first step that
    # scheduled the request, seconds (None when nothing was scheduled or arrivals are not timed)
    queue_delay_p50_s: float | None = None
    queue_delay_p99_s: float | None = None
    # engine mode, arrivals timed (timestamp or ignore): TTFT, TPOT, E2E and queueing time of the
    # counted requests that finished (`kvcore.engine.latency`); None otherwise
    latency: dict | None = None
    warnings: list[str] = field(default_factory=list)   # also printed on stderr, one line each
    # the CPU offload tier's totals (docs/offload.md); absent when offloading is off
    offload: dict | None = None
    # the clock that timed the run, its parameters and the source of its numbers
    # (`Clock.describe()`); absent for the default linear clock, whose constants are in config
    clock: dict | None = None
    # a live replay (kvcore.live, docs/live.md): its publishers and snapshots; absent otherwise
    live: dict | None = None
    # speculative decoding (kvcore.engine.spec_decode): vLLM's SpecDecodingStats over the run
    # (drafts verified, accepted, by position; kvcli's acceptance model decides); absent when off
    spec_decode: dict | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["offload"] is None:
            del d["offload"]
        if d["clock"] is None:
            del d["clock"]
        if d["live"] is None:
            del d["live"]
        if d["spec_decode"] is None:
            del d["spec_decode"]
        return d
