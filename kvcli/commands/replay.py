"""`kvcli replay TRACE`: replay a request trace through vLLM 0.33's KV cache stack.

The option declarations are module-level `Annotated` aliases so other commands that replay
(`kvcli stats`, `kvcli curve`) reuse them; `options_from_cli(...)` builds the `ReplayOptions`.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

_R = "Replay"   # help panel
_S = "Scheduler (vLLM names)"
_C = "Simulated clock"
_O = "Outputs"


class Mode(str, Enum):
    engine = "engine"
    cache = "cache"


class Arrivals(str, Enum):
    timestamp = "timestamp"
    ignore = "ignore"
    step = "step"


class Policy(str, Enum):
    fcfs = "fcfs"
    priority = "priority"


class EventsFormat(str, Enum):
    jsonl = "jsonl"
    vllm = "vllm"


class HashAlgo(str, Enum):
    sha256 = "sha256"
    sha256_cbor = "sha256_cbor"
    xxhash = "xxhash"
    xxhash_cbor = "xxhash_cbor"


TraceArg = Annotated[str, typer.Argument(help="Trace file (JSONL, .gz, Azure CSV) or - for stdin.")]
ModeOpt = Annotated[Mode, typer.Option("--mode", help="engine: vLLM's scheduler step by step; "
                                       "cache: one request at a time (lookup, allocate, free).",
                                       rich_help_panel=_R)]
BlockSizeOpt = Annotated[int | None, typer.Option(
    "--block-size", help="Tokens per KV block (default: 16, or the trace's config line).",
    rich_help_panel=_R)]
NumBlocksOpt = Annotated[int | None, typer.Option(
    "--num-blocks", help="vLLM's num_gpu_blocks, the null block included (default: engine "
    "16384; cache: room for every block).", rich_help_panel=_R)]
WarmupOpt = Annotated[float, typer.Option(
    "--warmup", help="Fraction of requests (arrival order) left out of the hit rate.",
    rich_help_panel=_R)]
HashAlgoOpt = Annotated[HashAlgo | None, typer.Option(
    "--hash-algo", help="Block hash (vLLM's prefix_caching_hash_algo) (default: sha256).",
    rich_help_panel=_R)]
PrefixCachingOpt = Annotated[bool | None, typer.Option(
    "--enable-prefix-caching/--no-enable-prefix-caching", help="Prefix caching (default: on).",
    rich_help_panel=_R, show_default=False)]
SkipBadOpt = Annotated[bool, typer.Option(
    "--skip-bad", help="Engine mode: skip requests that can never fit (counted as rejected) "
    "instead of stopping.", rich_help_panel=_R)]
ModelOpt = Annotated[str | None, typer.Option(
    "--model", help="Model preset (see `kvcli config`): its KV cache groups; with "
    "--gpu-memory-gib also num_blocks; its max_model_len unless given.", rich_help_panel=_R)]
ModelConfigOpt = Annotated[str | None, typer.Option(
    "--model-config", help="A Hugging Face config.json instead of a preset.",
    rich_help_panel=_R)]
GpuMemOpt = Annotated[float | None, typer.Option(
    "--gpu-memory-gib", help="With a model: size num_blocks from this much GPU memory.",
    rich_help_panel=_R)]
MaxNumSeqsOpt = Annotated[int | None, typer.Option(
    "--max-num-seqs", help="Requests running at once (default: 128).", rich_help_panel=_S,
    show_default=False)]
MaxBatchedOpt = Annotated[int | None, typer.Option(
    "--max-num-batched-tokens", help="Token budget per step (default: 2048).",
    rich_help_panel=_S, show_default=False)]
MaxModelLenOpt = Annotated[int | None, typer.Option(
    "--max-model-len", help="Prompts this long or longer are rejected (default: no limit).",
    rich_help_panel=_S, show_default=False)]
ThresholdOpt = Annotated[int | None, typer.Option(
    "--long-prefill-token-threshold", help="Cap on one request's tokens per step when others "
    "wait (default: 0 = off).", rich_help_panel=_S, show_default=False)]
PolicyOpt = Annotated[Policy | None, typer.Option(
    "--policy", help="Scheduling policy (default: fcfs).", rich_help_panel=_S, show_default=False)]
WatermarkOpt = Annotated[float | None, typer.Option(
    "--watermark", help="Fraction of blocks kept free when admitting (default: 0).",
    rich_help_panel=_S, show_default=False)]
ChunkedOpt = Annotated[bool | None, typer.Option(
    "--enable-chunked-prefill/--no-enable-chunked-prefill", help="Chunked prefill (default: on).",
    rich_help_panel=_S, show_default=False)]
FullFitOpt = Annotated[bool | None, typer.Option(
    "--full-sequence-must-fit/--no-full-sequence-must-fit",
    help="Admission needs room for the whole prompt (vLLM's scheduler_reserve_full_isl) "
    "(default: on).", rich_help_panel=_S, show_default=False)]
ArrivalsOpt = Annotated[Arrivals, typer.Option(
    "--arrivals", help="timestamp: by trace time on the simulated clock; ignore: all at once; "
    "step: at each request's integer arrival_step.", rich_help_panel=_C)]
OverheadOpt = Annotated[float, typer.Option("--step-overhead-ms", rich_help_panel=_C)]
PrefillCostOpt = Annotated[float, typer.Option("--prefill-ms-per-token", rich_help_panel=_C)]
DecodeCostOpt = Annotated[float, typer.Option("--decode-ms-per-seq", rich_help_panel=_C)]
EventsOpt = Annotated[str | None, typer.Option(
    "--events", help="Write the event stream here (- for stdout; the summary then goes to "
    "stderr).", rich_help_panel=_O)]
EventsFormatOpt = Annotated[EventsFormat, typer.Option(
    "--events-format", help="jsonl: ours (every block operation); vllm: vLLM's KV event "
    "batches.", rich_help_panel=_O)]
RequestsOpt = Annotated[Path | None, typer.Option(
    "--requests", help="One JSON line per request.", rich_help_panel=_O)]
StepsOpt = Annotated[Path | None, typer.Option(
    "--steps", help="One JSON line per engine step.", rich_help_panel=_O)]
JsonOpt = Annotated[bool, typer.Option("--json", help="The summary as JSON.",
                                       rich_help_panel=_O)]


def options_from_cli(*, mode=Mode.engine, block_size=None, num_blocks=None, warmup=0.0,
                     hash_algo=None, enable_prefix_caching=None, skip_bad=False, model=None,
                     model_config=None, gpu_memory_gib=None,
                     max_num_seqs=None, max_num_batched_tokens=None, max_model_len=None,
                     long_prefill_token_threshold=None, policy=None, watermark=None,
                     enable_chunked_prefill=None, full_sequence_must_fit=None,
                     arrivals=Arrivals.timestamp, step_overhead_ms=5.0,
                     prefill_ms_per_token=0.05, decode_ms_per_seq=0.25):
    """`ReplayOptions` from the values of the options above (enums or plain strings)."""
    from kvcore.engine.options import ReplayOptions

    def v(x):
        return x.value if isinstance(x, Enum) else x

    return ReplayOptions(
        mode=v(mode), block_size=block_size, num_blocks=num_blocks, warmup=warmup,
        hash_algo=v(hash_algo), enable_prefix_caching=enable_prefix_caching, skip_bad=skip_bad,
        model=model, model_config=model_config, gpu_memory_gib=gpu_memory_gib,
        max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
        max_model_len=max_model_len, long_prefill_token_threshold=long_prefill_token_threshold,
        policy=v(policy), watermark=watermark, enable_chunked_prefill=enable_chunked_prefill,
        scheduler_reserve_full_isl=full_sequence_must_fit, arrivals=v(arrivals),
        step_overhead_ms=step_overhead_ms, prefill_ms_per_token=prefill_ms_per_token,
        decode_ms_per_seq=decode_ms_per_seq)


def register(app: typer.Typer) -> None:
    @app.command("replay")
    def replay_cmd(
        trace: TraceArg,
        mode: ModeOpt = Mode.engine,
        block_size: BlockSizeOpt = None,
        num_blocks: NumBlocksOpt = None,
        warmup: WarmupOpt = 0.0,
        hash_algo: HashAlgoOpt = None,
        enable_prefix_caching: PrefixCachingOpt = None,
        skip_bad: SkipBadOpt = False,
        model: ModelOpt = None,
        model_config: ModelConfigOpt = None,
        gpu_memory_gib: GpuMemOpt = None,
        max_num_seqs: MaxNumSeqsOpt = None,
        max_num_batched_tokens: MaxBatchedOpt = None,
        max_model_len: MaxModelLenOpt = None,
        long_prefill_token_threshold: ThresholdOpt = None,
        policy: PolicyOpt = None,
        watermark: WatermarkOpt = None,
        enable_chunked_prefill: ChunkedOpt = None,
        full_sequence_must_fit: FullFitOpt = None,
        arrivals: ArrivalsOpt = Arrivals.timestamp,
        step_overhead_ms: OverheadOpt = 5.0,
        prefill_ms_per_token: PrefillCostOpt = 0.05,
        decode_ms_per_seq: DecodeCostOpt = 0.25,
        events: EventsOpt = None,
        events_format: EventsFormatOpt = EventsFormat.jsonl,
        requests: RequestsOpt = None,
        steps: StepsOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Replay a trace through vLLM 0.33's KV cache (and scheduler) and summarize the cache.

        Reads Mooncake, Bailian, token-id and length traces (JSONL, .gz, -) and Azure CSV. See
        docs/replay.md for the modes, the event schemas and every JSON key.
        """
        from kvcli import output

        opts = options_from_cli(
            mode=mode, block_size=block_size, num_blocks=num_blocks, warmup=warmup,
            hash_algo=hash_algo, enable_prefix_caching=enable_prefix_caching, skip_bad=skip_bad,
            model=model, model_config=model_config, gpu_memory_gib=gpu_memory_gib,
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=max_num_batched_tokens, max_model_len=max_model_len,
            long_prefill_token_threshold=long_prefill_token_threshold, policy=policy,
            watermark=watermark, enable_chunked_prefill=enable_chunked_prefill,
            full_sequence_must_fit=full_sequence_must_fit, arrivals=arrivals,
            step_overhead_ms=step_overhead_ms, prefill_ms_per_token=prefill_ms_per_token,
            decode_ms_per_seq=decode_ms_per_seq)
        fmt = events_format.value
        code = output.run(lambda: run_replay(trace, opts, events, fmt,
                                             None if requests is None else str(requests),
                                             None if steps is None else str(steps), as_json))
        if code:
            raise typer.Exit(code)


def run_replay(trace: str, opts, events: str | None, events_format: str,
               requests: str | None, steps: str | None, as_json: bool) -> int:
    """Open the outputs, replay, emit the summary; returns 130 after Ctrl-C, else 0."""
    import contextlib
    import sys

    from kvcli import output
    from kvcore.engine.events import JsonlEvents, VllmEvents
    from kvcore.engine.replay import replay
    from kvcore.errors import InputError
    from kvcore.traces import read_trace

    for name, path in (("requests", requests), ("steps", steps)):
        if path == "-":
            raise InputError("only --events may be - (stdout)", field=name)
    tr = read_trace(trace)
    with contextlib.ExitStack() as stack:
        def open_out(path: str | None):
            if path is None:
                return None
            if path == "-":
                return sys.stdout.buffer
            return stack.enter_context(output.atomic_file(path, "wb", keep_on_interrupt=True))

        ev_file = open_out(events)
        sink = None
        if ev_file is not None:
            sink = VllmEvents(ev_file) if events_format == "vllm" else JsonlEvents(ev_file)
        req_file = open_out(requests)
        step_file = open_out(steps)
        with output.progress(len(tr.requests), "replay") as advance:
            summary = replay(trace, opts, sink, steps_out=step_file, requests_out=req_file,
                             progress=advance, warn=output.warn, trace=tr)
        if events == "-":
            sys.stdout.buffer.flush()
    output.emit(summary_view(summary), as_json=as_json, to_stderr=(events == "-"))
    if summary.interrupted:
        output.message("interrupted: the outputs hold what was replayed so far")
        return 130
    return 0


def summary_view(summary):
    """The summary as a View: the JSON document and a two-column table for people."""
    from kvcli.output import Table, View

    d = summary.to_dict()
    rows = [
        ("trace", f"{d['trace']} ({d['format']})"),
        ("mode", d["mode"]),
        ("requests", d["requests"]),
        ("rejected", d["rejected"]),
        ("prompt tokens", d["prompt_tokens"]),
        ("hit tokens", d["hit_tokens"]),
        ("hit rate (tokens)", round(d["hit_rate"], 5)),
        ("hit rate (mean per request)", round(d["request_hit_rate_mean"], 5)),
    ]
    if d["warmup_requests"]:
        rows.append(("warm-up requests (not counted)", d["warmup_requests"]))
    if d["mode"] == "engine":
        rows += [("preemptions", d["preemptions"]),
                 ("recomputed tokens", d["recomputed_tokens"]),
                 ("re-admissions: prompt / hit tokens",
                  f"{d['preempted_prompt_tokens']:,} / {d['preempted_hit_tokens']:,}")]
    rows += [("evictions", d["evictions"]),
             ("peak KV usage", f"{d['peak_usage']:.2%}")]
    if d["mode"] == "engine":
        rows += [("mean KV usage", f"{d['mean_usage']:.2%}"),
                 ("steps", d["steps"]),
                 ("simulated time (s)", d["sim_time_s"])]
    rows += [("blocks", f"{d['num_blocks']:,} x {d['block_size']} tokens"),
             ("wall time (s)", d["wall_time_s"])]
    if d["events"]:
        rows.append(("events written", d["events"]))
    if d["interrupted"]:
        rows.append(("INTERRUPTED", "partial results"))
    cfg = d["config"]
    caption = ", ".join(f"{k}={cfg[k]}" for k in (
        "max_num_seqs", "max_num_batched_tokens", "max_model_len", "policy", "arrivals")
        if d["mode"] == "engine") or None
    return View(d, tables=[Table("kvcli replay", ("", "value"), rows, caption=caption)])
