"""A run's refusal of a request that can never run, told before the run (a sweep's pre-flight).

A replay refuses (exit 2) the first request that can never run when it meets it
(`ReplayContext.admit_or_reject`): a prompt at `max_model_len` or longer, or in engine mode more
blocks at once than the pool has (`fits.never_fits`). A sweep over `max_model_len` or
`num_blocks` ran such a job to that request and failed it there, after its checks had passed;
`first_refusal` finds it up front. It tests the trace's longest prompt and longest sequence:
exact when every group is full attention (the need only grows with the length); with windowed
groups a shorter request may still be refused at run time, as before.
"""

from __future__ import annotations

from typing import Any

from kvcore.engine.fits import length_managers, never_fits
from kvcore.engine.options import ReplayOptions
from kvcore.errors import InputError
from kvcore.kv_cache_manager import KVCacheManager
from kvcore.specs import FullAttentionSpec, KVCacheGroupSpec
from kvcore.traces import Trace

# the last trace's (itself, its longest prompt, its longest sequence): a sweep checks one trace
# against many jobs (held, so that its id is not another's)
_LONGEST: list[Any] = [None, None, None]


class _Probe:
    """What `never_fits` reads of a replay's context: the options, the pool's size, and the
    managers' rules (built on a 2-block pool: only their block sizes and skipped tokens are
    read, never their blocks)."""

    __slots__ = ("all_full", "cfg", "length_managers", "num_blocks")

    def __init__(self, cfg: ReplayOptions, groups: list[KVCacheGroupSpec], num_blocks: int,
                 hash_block_size: int) -> None:
        self.cfg = cfg
        self.num_blocks = num_blocks
        self.all_full = all(isinstance(g.kv_cache_spec, FullAttentionSpec) for g in groups)
        kvm = KVCacheManager(groups, cfg.max_model_len or 1 << 62, num_blocks=2,
                             hash_block_size=hash_block_size, enable_caching=False,
                             log_stats=False)
        self.length_managers = length_managers(kvm)


def first_refusal(trace: Trace, start: Any) -> InputError | None:
    """The refusal the run of `trace` with the started-up options (`StartUp`) would raise at
    its first request that can never run, naming the option that made it so (max_model_len or
    num_blocks) and the request's file and line; or, where such requests are skipped
    (`skip_bad`, cache mode's too-big ones), its "no request fits" when every one is (a
    cluster too: its loop refuses when every replica rejected all it was routed). None when
    nothing is found this way; with `max_steps`, only the first request is judged (a run
    stopped there may never meet the others, nor reject them all)."""
    cfg = start.cfg
    reqs = trace.requests
    if not isinstance(reqs, list) or not reqs:
        return None
    if _LONGEST[0] is not trace:
        _LONGEST[:] = [trace, max(reqs, key=lambda r: r.prompt_len),
                       max(reqs, key=lambda r: r.prompt_len + r.output_len)]
    probe = _Probe(cfg, start.groups, cfg.num_blocks, start.hash_block_size)
    if all(never_fits(probe, r) is None for r in _LONGEST[1:]):
        return None
    order = (sorted(reqs, key=lambda r: (r.arrival_step, r.index))
             if cfg.mode == "engine" and cfg.arrivals == "step" else reqs)
    first, some_fit = None, False
    for k, tr in enumerate(order):  # as the run meets them
        if cfg.max_steps is not None and (k or (
                cfg.arrivals == "step" and tr.arrival_step >= max(cfg.max_steps, 1))):
            # (stopped at max_steps, a run may never meet it: it meets only the first request
            # for sure, added before any step, or at its arrival step if that comes first)
            return None
        why = never_fits(probe, tr)
        if why is None:
            some_fit = True
            continue
        too_long = "max_model_len" in why
        field = "max_model_len" if too_long else "num_blocks"
        if not cfg.skip_bad and (too_long or cfg.mode == "engine"):
            return InputError(f"{trace.label}:{tr.line}: request {tr.id!r} can never run: {why}",
                              field=field)
        first = first or (tr.line, why, field)
    if first is None or some_fit:
        return None
    line, why, field = first
    return InputError(f"{trace.label}:{line}: no request fits: {why}", field=field)
