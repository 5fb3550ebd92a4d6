"""The curve's options: `CurveOptions`, their checks (`check_options`, every error naming its
option), and the capacities they ask for as usable blocks (`capacities_in_blocks`: blocks,
tokens, or GiB of a model's KV cache)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvcore.analysis.curve.input import MAX_BLOCK_SIZE, RULES
from kvcore.analysis.policies import POLICIES
from kvcore.errors import InputError, clipped, clipped_int
from kvcore.host_memory import MAX_GIB

# Bounds that keep every number of the answer a 64-bit integer (blocks x block size in tokens):
# far beyond any cache (10^12 blocks of 16 tokens are ~100,000x the largest GPU pools).
MAX_CAPACITY = 10**12           # blocks (capacities) or tokens (capacity_tokens)
MAX_CAPACITIES = 10_000         # values in one capacity list


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


def check_options(opts: CurveOptions) -> None:
    """Raise `InputError` naming the option that is wrong."""
    unknown = [p for p in opts.policies if p not in POLICIES]
    if unknown or not opts.policies:
        raise InputError(f"unknown policy {clipped(unknown[0] if unknown else '')}; "
                         f"choose from {', '.join(POLICIES)}", field="policies")
    twice = [p for i, p in enumerate(opts.policies) if p in opts.policies[:i]]
    if twice:       # (its rows came twice, its runs ran twice)
        raise InputError(f"policy {twice[0]!r} named twice", field="policies")
    if opts.rule not in RULES:
        raise InputError(f"must be one of {', '.join(RULES)}, got {clipped(opts.rule)}", field="rule")
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
            big = max(vals)     # (a 4,000-digit one was a 5 KB line)
            shown = f"{big:,}" if big < 10**30 else clipped_int(int(big))   # (ints here)
            raise InputError(f"must be at most {MAX_CAPACITY:,}, got {shown}", field=f)
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
        assert opts.model is not None       # (`check_options`: GiB need a model)
        per_block = bytes_per_block_of(opts.model, block_size)
        caps = [int(g * (1 << 30)) // per_block - 1 for g in opts.capacity_gib]
        field = "capacity_gib"
    else:
        return None
    if any(c < 1 for c in caps):
        raise InputError(f"a capacity holds less than one usable block of {block_size} tokens",
                         field=field)
    return caps
