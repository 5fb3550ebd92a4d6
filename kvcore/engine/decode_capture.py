"""The decode batches a replay runs, as a GPU forward would read them: `capture_decode_steps`.

For `kvcli bench --gpu --trace`: at a sample of engine steps, each decoding request of the
batch with its exact KV length and its block table in every KV cache group, taken from the
scheduler and the manager right after `schedule()` (the moment the batch's forward reads them;
`EngineLoop.watcher`), never reconstructed from the event stream (which cannot say how full a
last block is).

* A step's decodes are its batch's requests scheduled for one token past their prompt (the
  engine loop's own rule, `EngineLoop.clock`); their length is `num_computed_tokens` after
  `schedule()` advanced it: the keys the new token attends to, itself included.
* The sample: the replay runs twice (the same replay: results do not depend on the watcher).
  The first pass lists the steps that run at least one decode (D of them); the second captures
  the ones at positions ``(2i + 1) * D // (2N)``, i = 0..N-1: the middles of N equal stretches of
  decode steps (all of them when N >= D).
* Decode windows and the fast-forward are off in both passes (every step is one `schedule()`
  call); they change no result (tests/test_decode_windows.py), only the replay's speed.

No torch here: a captured step is plain lists; `kvcli.gpu_steps` times them on a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kvcore.engine.context import ReplayContext
from kvcore.engine.options import ReplayOptions, resolve
from kvcore.engine.replay import engine_loop, run
from kvcore.engine.replay_pool import group_type
from kvcore.errors import InputError
from kvcore.traces import Trace, read_trace


@dataclass(frozen=True, slots=True)
class CapturedGroup:
    """A KV cache group: vLLM's kind name (``full_attention``, ``sliding_window``, ...), block
    size, sliding window (None: none), layers."""

    kind: str
    block_size: int
    sliding_window: int | None
    num_layers: int


@dataclass(slots=True)
class DecodeStep:
    """One captured batch: its decoding requests in batch order, their lengths, their tables
    (``block_tables[g][i]``: request i's block ids in group g; a sliding group's entries before
    its window may be the null block 0)."""

    step: int
    ordinal: int                  # position among the replay's decode steps
    request_ids: list[str]
    seq_lens: list[int]
    block_tables: list[list[list[int]]]
    num_scheduled_tokens: int     # the whole batch's (prefill chunks included)


@dataclass(slots=True)
class Capture:
    trace: str
    groups: list[CapturedGroup]
    num_blocks: int
    total_steps: int
    decode_steps: int             # steps that ran at least one decode
    steps: list[DecodeStep] = field(default_factory=list)


def decodes_of(out: Any) -> list[Any]:
    """The batch's decoding requests in schedule order (`EngineLoop.clock`'s rule)."""
    nst = out.num_scheduled_tokens
    return [r for r in out.eager
            if nst[r.request_id] == 1 and r.num_computed_tokens > r.num_prompt_tokens]


def sample_positions(total: int, n: int) -> list[int]:
    """``n`` positions spread evenly over ``range(total)``: the middles of n equal stretches."""
    if n >= total:
        return list(range(total))
    return [(2 * i + 1) * total // (2 * n) for i in range(n)]


class _Counter:
    """First pass: which steps run decodes."""

    def __init__(self) -> None:
        self.steps: list[int] = []

    def scheduled(self, step: int, out: Any) -> None:
        if decodes_of(out):
            self.steps.append(step)


class _Capturer:
    """Second pass: the tables and lengths of the chosen steps."""

    def __init__(self, ctx: ReplayContext, wanted: dict[int, int]) -> None:
        self.kvm = ctx.kvm
        self.wanted = wanted          # step -> ordinal
        self.steps: list[DecodeStep] = []

    def scheduled(self, step: int, out: Any) -> None:
        ordinal = self.wanted.get(step)
        if ordinal is None:
            return
        reqs = decodes_of(out)
        tables = [self.kvm.get_block_ids(r.request_id) for r in reqs]
        num_groups = len(tables[0]) if tables else 0
        self.steps.append(DecodeStep(
            step, ordinal, [r.request_id for r in reqs], [r.num_computed_tokens for r in reqs],
            [[list(t[g]) for t in tables] for g in range(num_groups)],
            out.total_num_scheduled_tokens))


def _run(trace: Trace, opts: ReplayOptions, make_watcher: Callable[[ReplayContext], Any],
         warn: Callable[[str], None] | None) -> tuple[ReplayContext, Any]:
    cfg = resolve(opts, trace.config, path=trace.label, config_line=trace.config_line)
    if cfg.mode != "engine":
        raise InputError("the decode capture replays in engine mode", field="mode")
    ctx = ReplayContext(trace, cfg, None, warn=warn)
    loop = engine_loop(ctx)
    loop.fast_forward = loop.decode_windows = False
    loop.sched.windows = None
    loop.watcher = watcher = make_watcher(ctx)
    run(ctx, loop)
    if ctx.summary.interrupted:
        raise KeyboardInterrupt
    return ctx, watcher


def check_sample(sample: int) -> None:
    """The number of steps to capture: at least one."""
    if sample < 1:
        raise InputError("must be at least 1", field="sample_steps")


def capture_decode_steps(trace_path: str, options: ReplayOptions, sample: int, *,
                         warn: Callable[[str], None] | None = None,
                         trace: Trace | None = None) -> Capture:
    """Replay ``trace_path`` (engine mode) and capture ``sample`` of its decode steps."""
    check_sample(sample)
    if trace is None:
        trace = read_trace(trace_path)
    ctx, counter = _run(trace, options, lambda ctx: _Counter(), warn)
    positions = sample_positions(len(counter.steps), sample)
    wanted = {counter.steps[p]: p for p in positions}
    ctx2, capturer = _run(trace, options, lambda ctx: _Capturer(ctx, wanted), None)
    groups = [CapturedGroup(group_type(g.kv_cache_spec), g.kv_cache_spec.block_size,
                        getattr(g.kv_cache_spec, "sliding_window", None) or None,
                        len(g.layer_names))
              for g in ctx2.kvm.kv_cache_config.kv_cache_groups]
    if [s.step for s in capturer.steps] != sorted(wanted):
        raise RuntimeError("the second replay ran other steps than the first")  # a kvcore bug
    return Capture(trace.label, groups, ctx2.num_blocks, ctx.summary.steps, len(counter.steps),
                   capturer.steps)
