"""The replay's options as Typer declarations, for every command that replays (`replay`, `stats`).

One `Annotated` alias per `ReplayOptions` field; the flag is the field's name in kebab case. The
choices come from kvcore's tables and the defaults shown in the help from `ReplayOptions` itself.
Every alias defaults to None ("not given"), so that a trace's config line can fill what the user
left out; `replay_options(locals())` turns a command's parameters into the `ReplayOptions`.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

import typer

from kvcore.engine.options import ARRIVALS, KNOBS, MODES, ReplayOptions
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


ModeOpt = Annotated[Mode | None, _opt(
    "--mode", "engine: vLLM's scheduler step by step; cache: one request at a time (lookup, "
    "allocate, free)", _R)]
BlockSizeOpt = Annotated[int | None, _opt(
    "--block-size", "Tokens per KV block, unless the trace's config line says", _R)]
NumBlocksOpt = Annotated[int | None, _opt(
    "--num-blocks", "vLLM's num_gpu_blocks, the null block included (default: engine "
    "16384 or the model's at --gpu-memory-gib; cache: room for every block).", _R,
    default=False)]
WarmupOpt = Annotated[float | None, _opt(
    "--warmup", "Fraction of requests (arrival order) left out of the hit rate", _R)]
HashAlgoOpt = Annotated[HashAlgo | None, _opt(
    "--hash-algo", "Block hash (vLLM's prefix_caching_hash_algo)", _R)]
PrefixCachingOpt = Annotated[bool | None, _opt(
    "--enable-prefix-caching/--no-enable-prefix-caching", "Prefix caching", _R)]
SkipBadOpt = Annotated[bool, _opt(
    "--skip-bad", "Engine mode: skip requests that can never fit (counted as rejected) "
    "instead of stopping.", _R, default=False)]
ModelOpt = Annotated[str | None, _opt(
    "--model", "Model preset (see `kvcli config`): its KV cache groups; with --gpu-memory-gib "
    "also num_blocks; its max_model_len unless given.", _R, default=False)]
ModelConfigOpt = Annotated[str | None, _opt(
    "--model-config", "A Hugging Face config.json instead of a preset.", _R, default=False)]
GpuMemOpt = Annotated[float | None, _opt(
    "--gpu-memory-gib", "With a model: size num_blocks from this much GPU memory.", _R,
    default=False)]
MaxNumSeqsOpt = Annotated[int | None, _opt("--max-num-seqs", "Requests running at once", _S)]
MaxBatchedOpt = Annotated[int | None, _opt(
    "--max-num-batched-tokens", "Token budget per step", _S)]
MaxModelLenOpt = Annotated[int | None, _opt(
    "--max-model-len", "Prompts this long or longer are rejected (default: no limit).", _S,
    default=False)]
ThresholdOpt = Annotated[int | None, _opt(
    "--long-prefill-token-threshold", "Cap on one request's tokens per step when others wait "
    "(0 = off)", _S)]
PolicyOpt = Annotated[Policy | None, _opt("--policy", "Scheduling policy", _S)]
WatermarkOpt = Annotated[float | None, _opt(
    "--watermark", "Fraction of blocks kept free when admitting", _S)]
ChunkedOpt = Annotated[bool | None, _opt(
    "--enable-chunked-prefill/--no-enable-chunked-prefill", "Chunked prefill", _S)]
ReserveFullIslOpt = Annotated[bool | None, typer.Option(
    "--scheduler-reserve-full-isl/--no-scheduler-reserve-full-isl",
    help=f"Admission needs room for the whole prompt (vLLM's scheduler_reserve_full_isl) "
    f"(default: {'on' if D.scheduler_reserve_full_isl else 'off'}).", rich_help_panel=_S,
    show_default=False)]
ArrivalsOpt = Annotated[Arrivals | None, _opt(
    "--arrivals", "timestamp: by trace time on the simulated clock; ignore: all at once; step: "
    "at each request's integer arrival_step", _C)]
OverheadOpt = Annotated[float | None, _opt(
    "--step-overhead-ms", "Fixed cost of one engine step, ms", _C)]
PrefillCostOpt = Annotated[float | None, _opt(
    "--prefill-ms-per-token", "Cost of one prefill token, ms", _C)]
DecodeCostOpt = Annotated[float | None, _opt(
    "--decode-ms-per-seq", "Cost of one decoding sequence, ms", _C)]

_NAMES = frozenset(f.name for f in KNOBS)


def replay_options(params: dict[str, Any]) -> ReplayOptions:
    """The `ReplayOptions` of a command's parameters (its `locals()`): the fields among them
    that the user gave (not None), enums as their values; the rest stay defaults."""
    given = {k: (v.value if isinstance(v, Enum) else v) for k, v in params.items()
             if k in _NAMES and v is not None}
    return ReplayOptions(**given, given=frozenset(given))
