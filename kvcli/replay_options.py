"""The replay's options as Typer declarations, for every command that replays (`replay`, `stats`).

One `Annotated` alias per `ReplayOptions` field; the flag is the field's name in kebab case. The
choices come from kvcore's tables and the defaults shown in the help from `ReplayOptions` itself.
Every option defaults to None ("not given"), so that a trace's config line can fill what the
user left out. A command takes them all with `@with_replay_options()` and receives one
`opts: ReplayOptions`; a new knob is a `ReplayOptions` field and one entry in
`replay_option_table.SPEC`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any

import typer

from kvcli import output
from kvcli.replay_option_table import OFFLOAD, SCHED, SPEC, D
from kvcore.engine.options import ReplayOptions
from kvcore.engine.spec_config import check_method, set_by_json, speculative_settings
from kvcore.vllm_values import (
    KV_CACHE_DTYPES,
    kv_cache_dtype,
    kv_offloading_backend,
    retention_interval,
)

# vLLM's switches off by default that `vllm serve` spells --x/--no-x, as kvcli does then
_PAIRED = frozenset({"long_prefill_token_threshold_adaptive",
                     "enable_mamba_shared_prefix_checkpoint", "language_model_only"})


def _plain_flag(name: str, kind: Any) -> bool:
    """A switch off by default (`--skip-bad`): a plain flag, False when left off (not given)."""
    return kind is bool and getattr(D, name) is False and name not in _PAIRED


def _option(name: str, kind: Any, panel: str, help: str) -> Any:
    """The option of field `name`: `--name-in-kebab-case` (`--x/--no-x` for a switch that may be
    on by default), its help ending with the field's default unless the help says its own."""
    flag = output.flag(name)
    default = getattr(D, name)
    plain = _plain_flag(name, kind)
    if kind is bool and not plain:
        flag = f"{flag}/--no-{flag[2:]}"
    # the default last, in typer's own style (as its other options show theirs)
    text, said, own_default = help.partition(" [default: ")
    help = text + "." + (f" [default: {own_default}" if said else "")
    if not said and (kind is not bool or default is True):
        shown = {True: "on", False: "off"}.get(default, default) \
            if isinstance(default, bool) else default
        help = f"{help} [default: {shown}]"
    value_type = kind if plain else kind | None
    return Annotated[value_type, typer.Option(flag, *ALIASES.get(name, ()), help=help,
                                              rich_help_panel=panel, show_default=False,
                                              metavar=_METAVARS.get(name))]


# Values typer cannot show by their type
_METAVARS = {"prefix_cache_retention_interval": "0|N|dense", "limit_mm_per_prompt": "JSON",
             "kv_cache_dtype": "|".join(KV_CACHE_DTYPES)}
# vLLM 0.33's spellings of options kvcli first named otherwise (`vllm serve`'s flags, copied
# from a server's command line); kvcli's own names stay, for the scripts that use them
ALIASES: dict[str, tuple[str, ...]] = {
    "num_blocks": ("--num-gpu-blocks-override",),
    "hash_algo": ("--prefix-caching-hash-algo",),
    "policy": ("--scheduling-policy",),
    "tp": ("--tensor-parallel-size", "-tp"),
    "pipeline_parallel_size": ("--pp", "-pp"),
    "num_speculative_tokens": ("--spec-tokens",),
    "gpu_memory_utilization": ("--device-memory-utilization",),
}


OPTIONS: dict[str, Any] = {name: _option(name, *spec) for name, spec in SPEC.items()}
# vLLM's flags that choose what kvcli has one of: read so that a server's command line runs,
# checked, and not kept (no `ReplayOptions` field: the one value kvcli models is its default)
CHECKED_ONLY = {"kv_offloading_backend": kv_offloading_backend}
OPTIONS["kv_offloading_backend"] = Annotated[str | None, typer.Option(
    "--kv-offloading-backend", metavar="native|lmcache", rich_help_panel=OFFLOAD,
    show_default=False,
    help="vLLM's CPU tier backend: native is the tier kvcli models; lmcache is refused. "
    "[default: native]")]
OPTIONS["speculative_config"] = Annotated[str | None, typer.Option(
    "--speculative-config", "-sc", metavar="JSON", rich_help_panel=SCHED,
    show_default=False,
    help="vLLM's speculative decoding config: method ngram, eagle, eagle3 or mtp, its "
    "num_speculative_tokens and (EAGLE) model, disable_lookahead_block_hashes; other methods "
    "and keys are refused. [default: none]")]
_PLAIN_FLAGS = frozenset(name for name, (kind, _, _) in SPEC.items() if _plain_flag(name, kind))
# for commands that take only the model options (`kvcli script`)
ModelOpt, ModelConfigOpt, GpuMemOpt = (OPTIONS[k]
                                       for k in ("model", "model_config", "gpu_memory_gib"))



def read_files(trace: str, opts: Any) -> list[tuple[str, str | None]]:
    """The files a replay reads (`output.check_distinct`'s inputs): the trace, and the model
    config and calibration files its options name."""
    return [("the trace", trace),
            ("--model-config's file", getattr(opts, "model_config", None)),
            ("--calibration's file", getattr(opts, "calibration", None))]


def replay_options(params: dict[str, Any]) -> ReplayOptions:
    """The `ReplayOptions` of the replay options' values: those the user gave (not None),
    enums as their values; the rest stay defaults."""
    given = {k: (v.value if isinstance(v, Enum) else v) for k, v in params.items()
             if v is not None and not (k in _PLAIN_FLAGS and v is False)}   # a flag left off
    spec_json: frozenset[str] = frozenset()
    for name, check in CHECKED_ONLY.items():
        if name in given:
            check(given.pop(name))
    if "speculative_config" in given:
        # (vLLM's EngineArgs merges --spec-method and --spec-tokens into the JSON)
        flags = {k: given.pop(k, None) for k in ("spec_method", "num_speculative_tokens",
                                                  "spec_model")}
        spec = speculative_settings(given.pop("speculative_config"), flags["spec_method"],
                                    flags["num_speculative_tokens"], flags["spec_model"],
                                    output.warn)
        given.update(spec)
        spec_json = set_by_json(spec, flags)
    elif "spec_method" in given:
        given["spec_method"] = check_method(given["spec_method"], "spec_method", output.warn)
    if "kv_cache_dtype" in given:      # vLLM's names (and kvcli's fp16, bf16); not modelled: why
        given["kv_cache_dtype"] = kv_cache_dtype(given["kv_cache_dtype"])
    if "prefix_cache_retention_interval" in given:
        given["prefix_cache_retention_interval"] = retention_interval(
            given["prefix_cache_retention_interval"])
    return ReplayOptions(**given, given=frozenset(given), spec_json=spec_json)


def with_replay_options(first: bool = True) -> Callable[[Callable], Callable]:
    """A Typer command decorator: the command gets every replay option (after its arguments
    when `first`, else after its own options) and receives them as one `opts: ReplayOptions`.
    Typer reads the new signature; the command declares only its own parameters."""
    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn, eval_str=True)
        own = [p for p in sig.parameters.values() if p.name != "opts"]
        extra = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=alias,
                                   default=False if name in _PLAIN_FLAGS else None)
                 for name, alias in OPTIONS.items()]
        at = sum(1 for p in own if p.default is inspect.Parameter.empty) if first else len(own)
        params = own[:at] + extra + own[at:]

        @functools.wraps(fn)
        def command(**kw: Any) -> Any:
            values = {name: kw.pop(name) for name in OPTIONS}
            opts = output.run(lambda: replay_options(values))    # a bad value: one line, exit 2
            return fn(**kw, opts=opts)

        command.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params])
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command
    return wrap
