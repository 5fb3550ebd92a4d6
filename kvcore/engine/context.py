"""`ReplayContext`: what both replay modes share, built in one place.

The resolved options with the pool sized (a model's groups, `gpu_memory_gib`, the engine's
16,384 blocks or, in cache mode, room for every prompt block), the clock and the CPU tier's
config, all from `startup.start_up` (what is refused is refused there), the `KVCacheManager`
with the `Recorder` as its tracer, the block hasher, the requests' records (`RequestBook`), the
summary being filled, and the rules both modes apply to a request: whether it can ever run, how
an admission counts in the hit rate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import IO, Any

from kvcore.engine import latency
from kvcore.engine.admit_fields import AdmitFields
from kvcore.engine.events import JsonlEvents
from kvcore.engine.fits import length_managers, never_fits
from kvcore.engine.hash_memo import TraceBlockHasher
from kvcore.engine.options import ReplayOptions
from kvcore.engine.recorder import Recorder
from kvcore.engine.replay_manager import replay_manager
from kvcore.engine.replay_pool import group_type
from kvcore.engine.request_book import RequestBook
from kvcore.engine.results import ReplaySummary
from kvcore.engine.spec_decode import hash_lookahead
from kvcore.engine.start_warnings import start_warnings
from kvcore.engine.startup import start_up
from kvcore.engine.stream_checks import check_our_stream, hash_warnings
from kvcore.engine.vllm_events import VllmEvents
from kvcore.errors import InputError
from kvcore.group_specs import scheduler_groups
from kvcore.hashing import BlockHasher
from kvcore.offload.tier import OffloadTier
from kvcore.request import LoRARequest, Request
from kvcore.specs import FullAttentionSpec
from kvcore.traces import Trace, TraceRequest
from kvcore.traces.formats import CONTENTLESS_FORMATS
from kvcore.traces.stream import TraceStream


class ReplayContext:
    # Whether the run's summary is shown, and with it a CPU tier's `policy_state_end`, which
    # lists its chunk keys (block hashes): a cluster's replica's is not (`ReplicaContext`).
    summary_shows_tier_keys = True

    def __init__(self, trace: Trace, cfg: ReplayOptions,
                 sink: JsonlEvents | VllmEvents | None, *,
                 steps_out: IO[bytes] | None = None, requests_out: IO[bytes] | None = None,
                 progress: Callable[[int], None] | None = None,
                 warn: Callable[[str], None] | None = None,
                 vllm_sink: VllmEvents | None = None,
                 output_progress: Callable[[int], None] | None = None) -> None:
        """`sink` gets the event stream (ours or vLLM's); `vllm_sink`, vLLM's batches beside
        our stream (a cluster's replica writes both). `progress(1)` follows each request
        finished or rejected; `output_progress(n)`, now and then, the output tokens so far
        (engine mode: `kvcore.engine.token_progress`)."""
        self.trace = trace
        start = start_up(trace, cfg)
        self.cfg = cfg = start.cfg
        groups = scheduler_groups(start.groups)
        self.num_blocks: int = cfg.num_blocks    # type: ignore[assignment]  # (sized by start_up)
        self.sink = sink
        self.jsonl = sink if isinstance(sink, JsonlEvents) else None
        self.vllm = sink if isinstance(sink, VllmEvents) else vllm_sink
        self.steps_out = steps_out
        self.requests_out = requests_out
        self.progress: Callable[..., None] = progress or (lambda n=1: None)
        self.output_progress = output_progress
        # output tokens of the requests finished or rejected (each one's whole output length)
        self.output_done = 0
        self.warn = warn or (lambda msg: None)
        self.cost = start.clock
        clock = self.cost.describe() if (cfg.clock or cfg.gpu or cfg.calibration) else None
        self.summary = ReplaySummary(clock=clock, trace=trace.label, format=trace.format,
                                     mode=cfg.mode,
                                     prompt_content=trace.format not in CONTENTLESS_FORMATS,
                                     requests=len(trace.requests), num_blocks=self.num_blocks,
                                     block_size=cfg.block_size, config=cfg.to_dict())
        # Arrival order: timestamps (ties in file order), or with arrivals=step each request's
        # step, in file order within a step (as the scheduler oracle adds them).
        order: Iterable[TraceRequest] = trace.requests
        if cfg.mode == "engine" and cfg.arrivals == "step":
            order = (trace.requests.by_step() if isinstance(trace.requests, TraceStream)
                     else sorted(trace.requests, key=lambda r: (r.arrival_step, r.index)))
        # (a `TraceStream` reads the file again each time it is iterated)
        self.order: Iterable[TraceRequest] = order
        self.warmup_start = int(len(trace.requests) * cfg.warmup)
        # The requests' records (`request_book.py`): ``records`` holds those arrived and not
        # finished (a cluster's replica and a live replay keep them all).
        self.book = RequestBook(requests_out, self.warmup_start,
                                latency.applies(cfg.mode, cfg.arrivals), keep=False)
        self.records = self.book.live
        # prompt tokens of the requests this replay runs, and of those it rejected (a warning)
        self.prompt_tokens_total = trace.prompt_tokens
        self.rejected_prompt_tokens = 0
        # the prompt-hash thread's chunks (`hash_ahead.Segments`) while a replay runs
        self.prompt_hashes: Any = None
        # the requests that never arrived, in arrival order (the engine loop's, at the end)
        self.unreached: Callable[[], Iterable[TraceRequest]] = tuple
        self.step = 0
        self.t_ms = 0.0
        self.request_hit_sum = 0.0
        # LoRA adapters get ids 1, 2, 3, ... in order of first appearance in the trace file (a
        # stable `lora_int_id`, which vLLM's BlockStored events carry as `lora_id`).
        self.lora_ids = {name: i for i, name in enumerate(trace.lora_names, 1)}
        # The header's group list (`docs/events.md`): vLLM's spec kind names, but kvcli's short
        # `chunked_local` and `mla` (vLLM: `chunked_local_attention`, `mla_attention`).
        self.groups: list[dict[str, Any]] = [{"type": group_type(g.kv_cache_spec),
                        "block_size": g.kv_cache_spec.block_size,
                        "sliding_window": getattr(g.kv_cache_spec, "sliding_window", None)}
                       for g in groups]
        self.summary.groups = self.groups
        self.all_full = all(isinstance(g.kv_cache_spec, FullAttentionSpec) for g in groups)
        hash_block_size = start.hash_block_size
        lookahead = hash_lookahead(cfg)
        self.hasher: BlockHasher | None = None
        if lookahead:
            # EAGLE's lookahead hashes (`kvcore.lookahead_hashes`): the trace's memoised block
            # hashes and the hashes computed ahead do not apply
            self.hasher = BlockHasher(hash_block_size, cfg.hash_algo, cfg.hash_seed,
                                      lookahead=True)
        elif cfg.enable_prefix_caching or cfg.offloading:
            # the hasher finds a request's trace request here: among the records of a streamed
            # trace (the requests in flight), else in the whole trace (a cluster builds
            # requests before they reach a replica)
            traces = (self.book.traces() if isinstance(trace.requests, TraceStream)
                      else {tr.id: tr for tr in trace.requests})
            self.hasher = TraceBlockHasher(hash_block_size, cfg.hash_algo, cfg.hash_seed,
                                           traces=traces)
        admit_extra = None
        if self.jsonl is not None:
            # (prefix caching off, a CPU tier's hashes are the connector's: the stream says none)
            plain = (BlockHasher(hash_block_size, cfg.hash_algo, cfg.hash_seed,
                                 lookahead=lookahead)
                     if cfg.enable_prefix_caching else None)
            admit_extra = AdmitFields(hash_block_size, [g["block_size"] for g in self.groups],
                                      plain, lambda rid: self.records[rid].tr,
                                      arrays=self.jsonl.writes_arrays(),
                                      pieces=self.jsonl.pieces())
        warnings = start_warnings(self.cfg, self.trace, start.geometry, start.groups,
                                  start.mm)
        for message in (*warnings, *start.notes):
            self.warning(message)
        shown = any(s is not None and s.shows_hashes for s in (self.jsonl, self.vllm))
        for message in hash_warnings(cfg, trace, hashed=self.hasher is not None, shown=shown,
                                     tier_keys_shown=steps_out is not None
                                     or self.summary_shows_tier_keys):
            self.warning(message)
        self.recorder = Recorder(
            self.jsonl, self.num_blocks - 1, is_counted=self.is_counted, admit_extra=admit_extra,
            admit_parts=None if admit_extra is None or admit_extra.pieces is None
            else admit_extra.take_parts)
        self.kvm = replay_manager(cfg, groups, self.num_blocks, hash_block_size, self.recorder,
                                  kv_events=self.vllm is not None)
        assert self.kvm.hash_block_size == hash_block_size
        self.length_managers = length_managers(self.kvm)     # (`fits.never_fits`)
        check_our_stream(self.jsonl is not None, self.kvm.coordinator.partial_hits)
        self.offload = start.offload              # the CPU tier (None: off)
        # vLLM's failure at its first prefix-cache lookup, raised when the run looks up
        # (`replay.run`; None: the lookups pass)
        self.lookup_refusal = start.lookup_refusal
        self.tier: OffloadTier | None = None     # its tier, once a mode opens it (`open_tier`)

    def open_tier(self) -> OffloadTier | None:
        """The CPU tier's `OffloadTier` for this replay (None without one), writing into our
        event stream when there is one; kept as ``tier`` for the summary."""
        if self.offload is None:
            return None
        self.tier = OffloadTier(self.offload, self.kvm, enable_events=self.vllm is not None)
        if self.jsonl is not None:
            self.tier.attach_events(self.recorder, self.jsonl)
        return self.tier

    def take_kv_events(self) -> list:
        """vLLM's KV events of the step: the GPU manager's, then the CPU tier's (vLLM's publish
        order)."""
        events = self.kvm.take_events()
        if self.tier is not None:
            events += self.tier.conn.take_events()
        return events

    def warning(self, message: str) -> None:
        """A warning the user needs: in the summary's `warnings` and on the `warn` callback."""
        self.summary.warnings.append(message)
        self.warn(message)

    # -- the rules both modes apply ----------------------------------------------------------
    def is_counted(self, req: Request, resumed: bool) -> bool:
        return not resumed and self.records[req.request_id].pos >= self.warmup_start

    def make_request(self, tr: TraceRequest, add_order: int) -> Request:
        lora = None
        if tr.lora is not None:
            lora = LoRARequest(tr.lora, self.lora_ids[tr.lora])
        if tr.prompt_token_ids is not None:
            return Request(tr.id, tr.prompt_token_ids, self.hasher,
                           arrival_time=float(add_order), priority=tr.priority,
                           max_tokens=tr.output_len, lora_request=lora, cache_salt=tr.cache_salt)
        # hash ids: the prompt's tokens are computed when read, never built whole
        return Request(tr.id, None, self.hasher, arrival_time=float(add_order),
                       priority=tr.priority, max_tokens=tr.output_len, lora_request=lora,
                       cache_salt=tr.cache_salt, prompt_source=tr.prompt_source(),
                       num_prompt_tokens=tr.prompt_len)

    def admit_or_reject(self, tr: TraceRequest, skipped: list[tuple[int, str]]) -> bool:
        """True if `tr` may run. Else, with `skip_bad` (or in cache mode, for a capacity
        reason), record it as rejected in `skipped` and return False; otherwise it is bad
        input. vLLM refuses a prompt at max_model_len outright, so that is never skipped
        silently."""
        why = never_fits(self, tr)
        if why is None:
            return True
        too_long = "max_model_len" in why
        if not self.cfg.skip_bad and (too_long or self.cfg.mode == "engine"):
            raise InputError(f"request {tr.id!r} can never run: {why}", path=self.trace.label,
                             line=tr.line, field=self.prompt_field if too_long else "num_blocks",
                             remedy=("skip_bad", "skips such requests"))
        skipped.append((tr.line, why))
        self.reject(tr, why)
        return False

    def reject(self, tr: TraceRequest, reason: str) -> None:
        self.records[tr.id].rejected = reason
        self.summary.rejected += 1
        self.rejected_prompt_tokens += tr.prompt_len
        if self.jsonl is not None:
            self.jsonl.write("reject", tr.id, reason=reason)
        self.retire(tr)

    def finished(self, tr: TraceRequest) -> None:
        """Request `tr` finished."""
        self.summary.finished += 1
        self.retire(tr)

    def retire(self, tr: TraceRequest) -> None:
        """Request `tr` finished or was rejected: its record closed, the progress told."""
        self.output_done += tr.output_len
        self.book.retire(tr.id)
        self.progress(1)

    def check_rejections(self, skipped: list[tuple[int, str]]) -> None:
        """No request fits: bad input. Some skipped: one warning naming the first."""
        if not skipped:
            return
        line, why = skipped[0]
        if self.summary.rejected == self.summary.requests and self.all_rejected_is_bad:
            raise self.none_fits(line, why)
        more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
        self.warning(f"skipped {len(skipped)} request(s) that can never fit, counted as "
                     f"rejected and left out of the hit rate ({self.rejected_prompt_tokens:,} of "
                     f"{self.prompt_tokens_total:,} prompt "
                     f"tokens): {self.trace.label}:{line}: {why}{more}")

    # A cluster's replica holds only what was routed to it: the whole cluster's rejections
    # decide (`kvcore.cluster.loop`), so it says False.
    all_rejected_is_bad = True

    def none_fits(self, line: int, why: str) -> InputError:
        """The error of a replay that rejected every request, the first at `line` for `why`
        (the field that made it never fit, as `admit_or_reject` names it)."""
        return InputError(f"no request fits: {why}", path=self.trace.label, line=line,
                          field=self.prompt_field if "max_model_len" in why else "num_blocks")

    @property
    def prompt_field(self) -> str:
        """The trace's field of a prompt's length, as its format spells it (a token-id trace
        was told of an 'input_length' it has no such field)."""
        return {"tokens": "prompt_token_ids", "azure": "ContextTokens"}.get(
            self.trace.format, "input_length")

    def count_admission(self, req: Request, hit: int, resumed: bool) -> None:
        """An admission in the hit statistics: first admissions past the warm-up count;
        re-admissions after preemption go to the `preempted_*` counters (as vLLM's stats)."""
        s = self.summary
        if resumed:
            s.preempted_admissions += 1
            s.preempted_prompt_tokens += req.num_tokens
            s.preempted_hit_tokens += hit
            return
        rec = self.records[req.request_id]
        rec.hit_tokens = hit
        if rec.pos < self.warmup_start:
            s.warmup_requests += 1
            return
        s.counted_requests += 1
        s.prompt_tokens += req.num_tokens
        s.hit_tokens += hit
        self.request_hit_sum += hit / req.num_tokens
