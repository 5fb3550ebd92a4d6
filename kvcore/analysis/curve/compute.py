"""The curve's driver: options and their checks, the capacities asked for, and `compute_curve`,
which reads the trace, runs the one pass and the exact per-capacity points, and finds the knees
(the package docstring says which method gives each point)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from kvcore.analysis.curve.input import MAX_BLOCK_SIZE, RULES
from kvcore.analysis.curve.knees import knees_of
from kvcore.analysis.curve.onepass import one_pass
from kvcore.analysis.curve.reading import read_input
from kvcore.analysis.policies import POLICIES
from kvcore.errors import InputError, path_label
from kvcore.host_memory import MAX_GIB, check_pool_fits

# Bounds that keep every number of the answer a 64-bit integer (blocks x block size in tokens):
# far beyond any cache (10^12 blocks of 16 tokens are ~100,000x the largest GPU pools).
MAX_CAPACITY = 10**12           # blocks (capacities) or tokens (capacity_tokens)
MAX_CAPACITIES = 10_000         # values in one capacity list
DEFAULT_SWEEP_POINTS = 24


@dataclass(slots=True)
class CurveOptions:
    policies: tuple[str, ...] = ("lru",)
    rule: str = "vllm"
    block_size: int | None = None        # default: the trace's block size, else 16
    warmup: float = 0.0
    capacities: list[int] | None = None  # usable blocks; None: geometric sweep to the ceiling
    capacity_tokens: list[int] | None = None   # or tokens (blocks = tokens // block size)
    capacity_gib: list[float] | None = None    # or GiB of KV cache for `model`
    model: str | None = None
    jobs: int = 1


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


def check_options(opts: CurveOptions) -> None:
    """Raise `InputError` naming the option that is wrong."""
    unknown = [p for p in opts.policies if p not in POLICIES]
    if unknown or not opts.policies:
        raise InputError(f"unknown policy {unknown[0] if unknown else ''!r}; "
                         f"choose from {', '.join(POLICIES)}", field="policies")
    twice = [p for i, p in enumerate(opts.policies) if p in opts.policies[:i]]
    if twice:       # (its rows came twice, its runs ran twice)
        raise InputError(f"policy {twice[0]!r} named twice", field="policies")
    if opts.rule not in RULES:
        raise InputError(f"must be one of {', '.join(RULES)}, got {opts.rule!r}", field="rule")
    if opts.block_size is not None and opts.block_size < 1:
        raise InputError(f"must be >= 1, got {opts.block_size}", field="block_size")
    if opts.block_size is not None and opts.block_size > MAX_BLOCK_SIZE:
        raise InputError(f"must be at most {MAX_BLOCK_SIZE:,}, got {opts.block_size:,}",
                         field="block_size")
    if not 0.0 <= opts.warmup < 1.0:
        raise InputError(f"must be in [0, 1), got {opts.warmup}", field="warmup")
    if opts.jobs < 1:
        raise InputError(f"must be >= 1, got {opts.jobs}", field="jobs")
    given = [f for f, v in (("capacities", opts.capacities),
                            ("capacity_tokens", opts.capacity_tokens),
                            ("capacity_gib", opts.capacity_gib)) if v is not None]
    if len(given) > 1:
        raise InputError(f"give only one of {', '.join(given)}", field=given[1])
    if opts.capacity_gib is not None and opts.model is None:
        raise InputError("needs a model (bytes per block come from the model)",
                         field="capacity_gib")
    if opts.model is not None and opts.capacity_gib is None:
        # the model only turns GiB into blocks: without them it was dropped without a word
        raise InputError("has no effect without capacity_gib (it turns GiB into blocks)",
                         field="model")
    for f, vals in (("capacities", opts.capacities), ("capacity_tokens", opts.capacity_tokens),
                    ("capacity_gib", opts.capacity_gib)):
        if vals is not None and (not vals or any(not v > 0 for v in vals)):   # and NaN
            raise InputError("must be positive numbers", field=f)
        if vals is not None and any(not math.isfinite(v) for v in vals):
            raise InputError("must be finite numbers", field=f)
        if vals is not None and len(vals) > MAX_CAPACITIES:
            # each is a row, and for a policy other than one-pass LRU a whole replay
            raise InputError(f"{len(vals):,} capacities is more than the limit of "
                             f"{MAX_CAPACITIES:,} a curve", field=f)
        seen: set[float] = set()
        for v in vals or ():    # (two equal rows, the policies run twice), as for a policy
            if v in seen:
                raise InputError(f"{v:,} named twice", field=f)
            seen.add(v)
        if vals is not None and f != "capacity_gib" and max(vals) > MAX_CAPACITY:
            raise InputError(f"must be at most {MAX_CAPACITY:,}, got {max(vals):,}", field=f)
    if opts.capacity_gib is not None and max(opts.capacity_gib) > MAX_GIB:
        raise InputError(f"must be at most {MAX_GIB:,.0f} GiB (1 PiB), got "
                         f"{max(opts.capacity_gib):g}", field="capacity_gib")


def bytes_per_block_of(model: str, block_size: int) -> int:
    """Bytes one block id costs in the model's KV cache pool (`kvcore.sizing`)."""
    from kvcore.group_specs import kind_of
    from kvcore.models import layer_specs
    from kvcore.models.presets import load_preset
    from kvcore.sizing.config import bytes_per_block
    from kvcore.sizing.grouping import get_kv_cache_groups

    geometry = load_preset(model, others=False)     # (the curve takes no other model)
    groups = get_kv_cache_groups(layer_specs(geometry, block_size=block_size))
    kinds = [kind_of(g.kv_cache_spec) for g in groups]
    if kinds not in (["full"], ["mla"]) or groups[0].kv_cache_spec.block_size != block_size:
        # A block id is spent in every group, and a Mamba hybrid's attention block is raised
        # to fit its state (Qwen3-Next: 576 tokens): GiB as blocks of one full-attention group
        # of `block_size` tokens said 1 GiB held 74 blocks of 16 tokens there, 36x too few.
        counts = {k: kinds.count(k) for k in kinds}
        sizes = sorted({g.kv_cache_spec.block_size for g in groups})
        has = " and ".join(f"{n} {k} group{'s' if n > 1 else ''}" for k, n in counts.items())
        raise InputError(f"the curve replays one full-attention group of {block_size}-token "
                         f"blocks; {model}'s KV cache has {has} of "
                         f"{'/'.join(map(str, sizes))}-token blocks, so its GiB are not that "
                         "group's blocks: replay the model (kvcli replay --model M "
                         "--gpu-memory-gib G) or give --capacities", field="capacity_gib")
    return bytes_per_block(groups)


def capacities_in_blocks(opts: CurveOptions, block_size: int) -> list[int] | None:
    """The requested capacities as usable blocks (None: the default sweep).

    GiB follow vLLM: ``num_blocks = bytes // bytes_per_block``, one of which is the null block;
    the blocks are the model's at `block_size` (the replay's with that model).
    """
    if opts.capacities is not None:
        return opts.capacities
    if opts.capacity_tokens is not None:
        caps = [t // block_size for t in opts.capacity_tokens]
        field = "capacity_tokens"
    elif opts.capacity_gib is not None:
        per_block = bytes_per_block_of(opts.model, block_size)
        caps = [int(g * (1 << 30)) // per_block - 1 for g in opts.capacity_gib]
        field = "capacity_gib"
    else:
        return None
    if any(c < 1 for c in caps):
        raise InputError(f"a capacity holds less than one usable block of {block_size} tokens",
                         field=field)
    return caps


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
                          advance or (lambda n=1: None))
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
