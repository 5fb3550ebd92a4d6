"""The curve's driver: `compute_curve` reads the trace, runs the one pass and the exact
per-capacity points, and finds the knees (the package docstring says which method gives each
point); its options and the capacities they ask for are `options.py`."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from kvcore.analysis.curve.knees import knees_of
from kvcore.analysis.curve.onepass import one_pass
from kvcore.analysis.curve.options import CurveOptions, capacities_in_blocks, check_options
from kvcore.analysis.curve.reading import read_input
from kvcore.errors import path_label
from kvcore.host_memory import check_pool_fits

DEFAULT_SWEEP_POINTS = 24


@dataclass(frozen=True, slots=True)
class CurvePoint:
    policy: str
    capacity_blocks: int
    hit_rate: float | None      # None when no counted request ran (all rejected)
    hit_tokens: int
    prompt_tokens: int
    rejected: int               # requests that could not run at this capacity
    method: str                 # one-pass | replay | simulation
    block_size: int = 0
    capacity_gib: float | None = None   # the GiB asked for (--capacity-gib), else None
    rejected_tokens: int = 0    # their prompt tokens: misses in `prompt_tokens`, never left out

    @property
    def capacity_tokens(self) -> int:
        return self.capacity_blocks * self.block_size

    def to_dict(self) -> dict:
        return {"policy": self.policy, "capacity_blocks": self.capacity_blocks,
                "capacity_tokens": self.capacity_tokens, "capacity_gib": self.capacity_gib,
                "hit_rate": self.hit_rate, "hit_tokens": self.hit_tokens,
                "prompt_tokens": self.prompt_tokens, "rejected": self.rejected,
                "rejected_tokens": self.rejected_tokens, "method": self.method}


@dataclass(slots=True)
class CurveResult:
    trace: str
    rule: str
    block_size: int
    warmup: float
    requests: int
    counted_requests: int
    distinct_blocks: int
    ceiling: float                       # hit rate of an infinite cache
    ceiling_capacity_blocks: int | None  # smallest LRU capacity reaching it (None: not found)
    one_pass_exact: tuple[int, float]    # capacities where the LRU one pass is exact
    points: list[CurvePoint] = field(default_factory=list)
    knees: dict[str, dict[str, int | None]] = field(default_factory=dict)
    # per policy and fraction: "one-pass" (exact), "points" (the smallest evaluated capacity
    # that reaches it) or "bound" (another upper bound: `kvcore.analysis.curve.knees`)
    knee_method: dict[str, dict[str, str | None]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        lo, hi = self.one_pass_exact
        return {"trace": self.trace, "rule": self.rule, "block_size": self.block_size,
                "warmup": self.warmup, "requests": self.requests,
                "counted_requests": self.counted_requests,
                "distinct_blocks": self.distinct_blocks, "ceiling": self.ceiling,
                "ceiling_capacity_blocks": self.ceiling_capacity_blocks,
                "one_pass_exact": {"min": lo, "max": None if math.isinf(hi) else int(hi)},
                "points": [p.to_dict() for p in self.points],
                "knees": self.knees, "knee_method": self.knee_method,
                "warnings": self.warnings}


def geometric_sweep(lo: int, hi: int, n: int = DEFAULT_SWEEP_POINTS) -> list[int]:
    """About `n` capacities spread geometrically over [lo, hi], both ends included."""
    lo, hi = max(1, lo), max(1, lo, hi)
    if hi == lo:
        return [lo]
    ratio = (hi / lo) ** (1 / (n - 1))
    return sorted({min(hi, round(lo * ratio ** i)) for i in range(n)} | {hi})


def compute_curve(trace_path: str, opts: CurveOptions, *, trace=None,
                  advance: Callable[[int], None] | None = None,
                  on_total: Callable[[int], None] | None = None) -> CurveResult:
    """Read the trace and compute the curve. Bad input raises `InputError` (exit 2)."""
    check_options(opts)
    block_size = opts.block_size
    if block_size is None and opts.model is not None:
        # GiB of a model's KV cache hold blocks of the replay's block size with that model
        from kvcore.engine.options import ReplayOptions

        block_size = ReplayOptions().block_size
    inp, bs, notes, trace = read_input(trace_path, opts.rule, opts.warmup, block_size, trace)
    lru = one_pass(inp)
    lo, hi = lru.exact_min, lru.exact_max
    # The one pass's ceiling capacity, no smaller than the largest request (below it requests
    # are rejected); trusted only where the one pass is exact, else found among the points
    # (the one pass said "reached at 3 blocks" where a replay at 3 hit half the ceiling).
    one_pass_cap = max(lru.ceiling_capacity, lo, 1)
    cap_exact = lru.is_exact(one_pass_cap)
    caps = capacities_in_blocks(opts, bs)
    gib = dict(zip(caps, opts.capacity_gib)) if caps and opts.capacity_gib else {}
    if caps is None:
        # Below the largest request (rule vllm) some requests cannot run at all: the sweep
        # starts there; ask for capacities to replay smaller pools. Past the exact range the
        # ceiling may come later than the one pass says: the sweep goes on to twice that.
        caps = geometric_sweep(lo, one_pass_cap if cap_exact else 2 * one_pass_cap)
    caps = sorted(set(caps))

    points: list[CurvePoint] = []
    tasks: list[tuple[str, str, int]] = []   # (kind, policy, capacity) for curve.exact
    for policy in opts.policies:
        for c in caps:
            if policy == "lru" and lru.is_exact(c):
                points.append(CurvePoint("lru", c, lru.hit_rate(c), lru.hit_tokens(c),
                                         lru.total_tokens, 0, "one-pass", bs, gib.get(c)))
            elif policy == "lru" and opts.rule == "vllm":
                tasks.append(("replay", "lru", c))
            else:
                tasks.append(("simulation", policy, c))
    replays = [c for kind, _, c in tasks if kind == "replay"]
    warnings = notes + ([lru.not_exact_warning(replays)] if replays else [])
    if opts.jobs > 1 and len(tasks) <= 1:
        # --jobs spreads the exact points over processes: with one or none it changed nothing
        warnings.append(f"option --jobs: no effect: {len(tasks)} exact point(s) to run (the "
                        "one-pass LRU gives the others in this process)")
    if replays:
        # A replay allocates its pool (the simulations and the one pass do not): refused up
        # front, before any point runs, when the largest cannot fit this machine's memory.
        check_pool_fits(max(replays) + 1, field=next(
            (f for f in ("capacity_tokens", "capacity_gib") if getattr(opts, f) is not None),
            "capacities"))
    if on_total is not None:
        on_total(len(tasks) * inp.num_requests)     # progress counts requests run
    exact = []
    if tasks:
        # Imported only when needed: the policies and the replay cost start-up time.
        from kvcore.analysis.curve.exact import Task, run_tasks

        if trace is None and any(kind == "replay" for kind, _, _ in tasks):
            from kvcore.traces import read_trace

            trace = read_trace(trace_path)   # replays run on trace requests
        exact = run_tasks([Task(*t) for t in tasks], inp, trace, opts.warmup, opts.jobs,
                          advance or (lambda n: None))
    total = lru.total_tokens    # every counted prompt: a rejected request's tokens are misses
    for r in exact:
        t = r.task
        rate = r.hit_tokens / total if total else None
        points.append(CurvePoint(t.policy, t.capacity, rate, r.hit_tokens, total, r.rejected,
                                 t.kind, bs, gib.get(t.capacity),
                                 max(0, total - r.prompt_tokens)))
    order = {p: i for i, p in enumerate(opts.policies)}
    points.sort(key=lambda p: (order[p.policy], p.capacity_blocks))

    ceiling = lru.hit_rate(math.inf)
    ceiling_cap: int | None = one_pass_cap if cap_exact else next(
        (p.capacity_blocks for p in points if p.policy == "lru" and p.hit_rate is not None
         and p.hit_tokens >= lru.ceiling_tokens), None)
    knees: dict[str, dict[str, int | None]] = {}
    knee_method: dict[str, dict[str, str | None]] = {}
    for policy in opts.policies:
        knees[policy], knee_method[policy] = knees_of(
            lru if policy == "lru" else None, [p for p in points if p.policy == policy], ceiling)
    label = path_label(trace_path) if trace is None else trace.label
    return CurveResult(trace=label, rule=opts.rule,
                       block_size=bs, warmup=opts.warmup, requests=inp.num_requests,
                       counted_requests=inp.num_requests - inp.first_counted,
                       distinct_blocks=inp.num_keys, ceiling=ceiling,
                       ceiling_capacity_blocks=ceiling_cap, one_pass_exact=(lo, hi),
                       points=points, knees=knees, knee_method=knee_method,
                       warnings=warnings)
