"""The replay's options as Typer declarations, for every command that replays (`replay`, `stats`).

One `Annotated` alias per `ReplayOptions` field; the flag is the field's name in kebab case. The
choices come from kvcore's tables and the defaults shown in the help from `ReplayOptions` itself.
Every option defaults to None ("not given"), so that a trace's config line can fill what the
user left out. A command takes them all with `@with_replay_options()` and receives one
`opts: ReplayOptions`; a new knob is a `ReplayOptions` field and one entry in `OPTIONS`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any

import typer

from kvcore.engine.options import ARRIVALS, MODES, ReplayOptions
from kvcore.engine.queues import QUEUES
from kvcore.hashing import HASH_FUNCTIONS

_R = "Replay"   # help panels
_S = "Scheduler (vLLM names)"
_C = "Simulated clock"
D = ReplayOptions()


def _choices(name: str, values) -> type[Enum]:
    return Enum(name, {v: v for v in values}, type=str)  # type: ignore[return-value]


Mode = _choices("Mode", MODES)
Arrivals = _choices("Arrivals", ARRIVALS)
Policy = _choices("Policy", QUEUES)
HashAlgo = _choices("HashAlgo", HASH_FUNCTIONS)


def _opt(flags: str, help: str, panel: str, *, default: bool = True, **kw: Any) -> Any:
    """A replay option whose help ends with its `ReplayOptions` default."""
    name = flags.split("/")[0].lstrip("-").replace("-", "_")
    if default:
        value = getattr(D, name)
        shown = {True: "on", False: "off"}.get(value, value) if isinstance(value, bool) \
            else value
        help = f"{help} (default: {shown})."
    return typer.Option(flags, help=help, rich_help_panel=panel, show_default=False, **kw)


# Field name -> its option. The only list of the replay options on the CLI side.
OPTIONS: dict[str, Any] = {
    "mode": Annotated[Mode | None, _opt(
        "--mode", "engine: vLLM's scheduler step by step; cache: one request at a time (lookup, "
        "allocate, free)", _R)],
    "block_size": Annotated[int | None, _opt(
        "--block-size", "Tokens per KV block, unless the trace's config line says", _R)],
    "num_blocks": Annotated[int | None, _opt(
        "--num-blocks", "vLLM's num_gpu_blocks, the null block included (default: engine "
        "16384 or the model's at --gpu-memory-gib; cache: room for every block).", _R,
        default=False)],
    "warmup": Annotated[float | None, _opt(
        "--warmup", "Fraction of requests (arrival order) left out of the hit rate", _R)],
    "hash_algo": Annotated[HashAlgo | None, _opt(
        "--hash-algo", "Block hash (vLLM's prefix_caching_hash_algo)", _R)],
    "enable_prefix_caching": Annotated[bool | None, _opt(
        "--enable-prefix-caching/--no-enable-prefix-caching", "Prefix caching", _R)],
    "skip_bad": Annotated[bool, _opt(
        "--skip-bad", "Engine mode: skip requests that can never fit (counted as rejected) "
        "instead of stopping.", _R, default=False)],
    "model": Annotated[str | None, _opt(
        "--model", "Model preset (see `kvcli config`): its KV cache groups; with --gpu-memory-gib "
        "also num_blocks; its max_model_len unless given.", _R, default=False)],
    "model_config": Annotated[str | None, _opt(
        "--model-config", "A Hugging Face config.json instead of a preset.", _R, default=False)],
    "gpu_memory_gib": Annotated[float | None, _opt(
        "--gpu-memory-gib", "With a model: size num_blocks from this much GPU memory.", _R,
        default=False)],
    "max_num_seqs": Annotated[int | None, _opt("--max-num-seqs", "Requests running at once", _S)],
    "max_num_batched_tokens": Annotated[int | None, _opt(
        "--max-num-batched-tokens", "Token budget per step", _S)],
    "max_model_len": Annotated[int | None, _opt(
        "--max-model-len", "Prompts this long or longer are rejected (default: no limit).", _S,
        default=False)],
    "long_prefill_token_threshold": Annotated[int | None, _opt(
        "--long-prefill-token-threshold", "Cap on one request's tokens per step when others wait "
        "(0 = off)", _S)],
    "policy": Annotated[Policy | None, _opt("--policy", "Scheduling policy", _S)],
    "watermark": Annotated[float | None, _opt(
        "--watermark", "Fraction of blocks kept free when admitting", _S)],
    "enable_chunked_prefill": Annotated[bool | None, _opt(
        "--enable-chunked-prefill/--no-enable-chunked-prefill", "Chunked prefill", _S)],
    "scheduler_reserve_full_isl": Annotated[bool | None, _opt(
        "--scheduler-reserve-full-isl/--no-scheduler-reserve-full-isl",
        "Admission needs room for the whole prompt", _S)],
    "arrivals": Annotated[Arrivals | None, _opt(
        "--arrivals", "timestamp: by trace time on the simulated clock; ignore: all at once; step: "
        "at each request's integer arrival_step", _C)],
    "step_overhead_ms": Annotated[float | None, _opt(
        "--step-overhead-ms", "Fixed cost of one engine step, ms", _C)],
    "prefill_ms_per_token": Annotated[float | None, _opt(
        "--prefill-ms-per-token", "Cost of one prefill token, ms", _C)],
    "decode_ms_per_seq": Annotated[float | None, _opt(
        "--decode-ms-per-seq", "Cost of one decoding sequence, ms", _C)],
}
# for commands that take only the model options (`kvcli script`)
ModelOpt, ModelConfigOpt, GpuMemOpt = (OPTIONS[k]
                                       for k in ("model", "model_config", "gpu_memory_gib"))



def replay_options(params: dict[str, Any]) -> ReplayOptions:
    """The `ReplayOptions` of the replay options' values: those the user gave (not None),
    enums as their values; the rest stay defaults."""
    given = {k: (v.value if isinstance(v, Enum) else v) for k, v in params.items()
             if v is not None}
    return ReplayOptions(**given, given=frozenset(given))


def with_replay_options(first: bool = True) -> Callable[[Callable], Callable]:
    """A Typer command decorator: the command gets every replay option (after its arguments
    when `first`, else after its own options) and receives them as one `opts: ReplayOptions`.
    Typer reads the new signature; the command declares only its own parameters."""
    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn, eval_str=True)
        own = [p for p in sig.parameters.values() if p.name != "opts"]
        extra = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=alias,
                                   default=False if name == "skip_bad" else None)
                 for name, alias in OPTIONS.items()]
        at = sum(1 for p in own if p.default is inspect.Parameter.empty) if first else len(own)
        params = own[:at] + extra + own[at:]

        @functools.wraps(fn)
        def command(**kw: Any) -> Any:
            opts = replay_options({name: kw.pop(name) for name in OPTIONS})
            return fn(**kw, opts=opts)

        command.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params])
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command
    return wrap
