"""Clocks by name: `--clock roofline | calibrated | linear[:C0,C1,C2] | fixed:MS`.

Without `--clock`: `calibrated` when a calibration file is given, `roofline` when a model and a
GPU are, else today's `linear` defaults.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from kvcore.clock.base import Clock
from kvcore.engine.cost import CostModel
from kvcore.errors import InputError, clipped, nonempty_name

# The clocks other than `linear` (and the models they read) are imported by the branch that
# makes one: a replay with the default clock never loads them (~30 ms of a process's start).
if TYPE_CHECKING:
    from kvcore.clock.calibrated import CalibratedClock
    from kvcore.clock.roofline import RooflineClock
    from kvcore.engine.options import ReplayOptions
    from kvcore.models import ModelGeometry


def _numbers(arg: str, n: int, spec: str) -> list[float]:
    """The ms of `linear:C0,C1,C2` or `fixed:MS`: each within the hour the step cost options
    allow (`HOUR_MS`): `fixed:1e300` took simulated time past where a float keeps a step
    apart, and `kvcli cluster`'s metrics clock never moved on (it hung)."""
    from kvcore.engine.options import HOUR_MS

    try:
        vals = [float(x) for x in arg.split(",")]
    except ValueError:
        vals = []
    if len(vals) != n or not all(math.isfinite(v) and 0 <= v <= HOUR_MS for v in vals):
        raise InputError(f"{spec!r}: expected {n} finite number(s) >= 0 and at most "
                         f"{HOUR_MS:,.0f} (an hour, in ms) after ':'", field="clock")
    return vals


def model_geometry(model: str | None, model_config: str | None) -> ModelGeometry | None:
    from kvcore.models import load_preset
    from kvcore.models.config_file import read_config_file

    # ('' was "none given": --model '' --model-config cfg.json ran on the config, unsaid)
    nonempty_name(model, "model")
    nonempty_name(model_config, "model_config")
    if model and model_config:
        # (the preset won and the config.json was dropped without a word, as `kvcli replay`
        # and `kvcli config` refuse the pair)
        raise InputError("give a model preset or a model config (config.json), not both",
                         field="model")
    if model:
        return load_preset(model)
    if model_config:
        return read_config_file(model_config)
    return None


def make_clock(cfg: ReplayOptions, geometry: ModelGeometry | None = None) -> Clock:
    """The replay's clock from its options (`clock`, `gpu`, `model`/`model_config`, `tp`,
    `kv_cache_dtype`, the linear constants, `async_scheduling`); ``geometry``: the options'
    model as the start-up read it (else read here)."""
    spec = cfg.clock
    if spec is None:
        spec = ("calibrated" if cfg.calibration else
                "roofline" if cfg.gpu and (cfg.model or cfg.model_config) else "linear")
    name, colon, arg = spec.partition(":")
    if cfg.calibration and name != "calibrated":
        raise InputError(f"a calibration file is read by the calibrated clock only, not {spec!r}",
                         field="calibration")
    if cfg.gpu and name in ("linear", "fixed"):
        from kvcore.clock.gpus import find_gpu

        find_gpu(cfg.gpu)       # a name no clock reads is still checked (it was echoed as is)
    if name == "linear":
        if not colon:
            # the step options given are the user's numbers, the defaults spelt out included
            steps = {"step_overhead_ms", "prefill_ms_per_token", "decode_ms_per_seq"}
            return CostModel(cfg.step_overhead_ms, cfg.prefill_ms_per_token,
                             cfg.decode_ms_per_seq, user_set=bool(steps & (cfg.given or set())))
        c0, c1, c2 = _numbers(arg, 3, spec)
        return CostModel(c0, c1, c2, user_set=True)
    if name == "fixed":
        from kvcore.clock.fixed import FixedClock

        (ms,) = _numbers(arg, 1, spec)
        return FixedClock(ms)
    if name == "roofline":
        from kvcore.clock.gpus import find_gpu
        from kvcore.clock.roofline import RooflineClock

        if colon:
            raise InputError("'roofline' takes no parameters", field="clock")
        g = geometry or model_geometry(cfg.model, cfg.model_config)
        if g is None or not cfg.gpu:
            raise InputError("the roofline clock needs a model (--model or --model-config) "
                             "and a GPU (--gpu)", field="clock")
        return with_drafter(RooflineClock(g, find_gpu(cfg.gpu), tp=cfg.tp,
                                          kv_cache_dtype=cfg.kv_cache_dtype,
                                          async_scheduling=cfg.async_scheduling,
                                          spec_tokens=cfg.num_speculative_tokens), cfg)
    if name == "calibrated":
        return with_drafter(calibrated_clock(
            cfg.calibration, model=cfg.model, model_config=cfg.model_config, gpu=cfg.gpu,
            tp=cfg.tp, kv_cache_dtype=cfg.kv_cache_dtype, async_scheduling=cfg.async_scheduling,
            colon=colon, geometry=geometry, spec_tokens=cfg.num_speculative_tokens), cfg)
    raise InputError(f"unknown clock {clipped(spec)}; one of roofline, calibrated, linear:C0,C1,C2, "
                     "fixed:MS",
                     field="clock")


def with_drafter(clock: RooflineClock, cfg: ReplayOptions) -> RooflineClock:
    """The clock, timing a drafter's passes after each forward where the replay drafts with a
    known draft, an EAGLE draft given or an MTP module (`kvcore.clock.draft_passes`; without
    one they are not timed: `start_warnings` says so)."""
    from kvcore.engine.spec_decode import spec_draft

    if (given := spec_draft(cfg)) is not None:
        from kvcore.clock.draft_passes import DraftPasses
        from kvcore.models.drafts import load_spec_draft

        clock.draft = DraftPasses(load_spec_draft(*given, clock.g, cfg.num_speculative_tokens),
                                  cfg.num_speculative_tokens, clock)
    return clock


def calibrated_clock(path: str | None, *, model: str | None, model_config: str | None,
                     gpu: str | None, tp: int, kv_cache_dtype: str, async_scheduling: bool,
                     colon: str = "", geometry: ModelGeometry | None = None,
                     spec_tokens: int = 0) -> CalibratedClock:
    """The calibrated clock of a file; `--gpu`, if given, must name the GPU it was measured on."""
    from kvcore.clock.calibrated import CalibratedClock
    from kvcore.clock.calibration import read_calibration
    from kvcore.clock.gpus import find_gpu

    if colon:
        raise InputError("'calibrated' takes no parameters (the file is --calibration)",
                         field="clock")
    if not path:
        raise InputError("the calibrated clock needs a calibration file (kvcli calibrate --gpu)",
                         field="calibration")
    # (the file first: a missing one is the first thing to say; then what it needs, named
    # after the option the user typed, not the clock it implies)
    cal = read_calibration(path)
    g = geometry or model_geometry(model, model_config)
    if g is None:
        raise InputError(f"{cal.path}: the calibrated clock needs the model it was measured "
                         "for (--model or --model-config)", field="calibration")
    if gpu and find_gpu(gpu).name != cal.gpu.name:
        raise InputError(f"{cal.path} was measured on {cal.doc['gpu']['name']!r}, not on "
                         f"{gpu!r} (leave --gpu out: the file's ceilings are the GPU)",
                         field="gpu")
    return CalibratedClock(g, cal, tp=tp, kv_cache_dtype=kv_cache_dtype,
                           async_scheduling=async_scheduling, spec_tokens=spec_tokens)
