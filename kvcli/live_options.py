"""The live options (`kvcore.live.options.LiveOptions`: KV events over ZMQ, the wall-clock pace,
vLLM's metrics) as Typer declarations, for `kvcli replay` and `kvcli cluster`.

They are not replay options (`replay_options.py`): they change nothing the replay computes, a
trace's config line cannot set them and `kvcli stats` has no use for them. A command takes
them with `@with_live_options()` and receives `live: LiveOptions` and `metrics: str | None`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer

from kvcore.live.options import DEFAULT_ENDPOINT, LiveOptions

_L = "Live: a stand-in vLLM (docs/live.md)"
D = LiveOptions()

OPTIONS: dict[str, Any] = {
    "kv_events_endpoint": Annotated[str | None, typer.Option(
        "--kv-events-endpoint", metavar="ENDPOINT", rich_help_panel=_L,
        help="Publish vLLM's KV event batches on a ZMQ PUB socket here, as vLLM does: "
        f"tcp://*:PORT binds (vLLM's default is {DEFAULT_ENDPOINT}), tcp://HOST:PORT connects "
        "to a bound subscriber, ipc://PATH binds. A cluster's replica K uses PORT+K.")],
    "kv_events_replay_endpoint": Annotated[str | None, typer.Option(
        "--kv-events-replay-endpoint", metavar="ENDPOINT", rich_help_panel=_L,
        help="A ROUTER socket (bound) that resends buffered batches from a sequence number, "
        "as vLLM's replay endpoint.")],
    "kv_events_topic": Annotated[str, typer.Option(
        "--kv-events-topic", rich_help_panel=_L, help="The messages' topic frame.")],
    "kv_events_hwm": Annotated[int, typer.Option(
        "--kv-events-hwm", rich_help_panel=_L, help="Send high-water mark: batches a slow "
        "subscriber may lag before they drop (counted, warned).")],
    "kv_events_buffer_steps": Annotated[int, typer.Option(
        "--kv-events-buffer-steps", rich_help_panel=_L,
        help="Batches kept for the replay socket.")],
    "kv_events_wait_s": Annotated[float, typer.Option(
        "--kv-events-wait-s", rich_help_panel=_L, help="Wait this long for a first "
        "subscription before the first batch (0: don't; no batch is lost to ZMQ's slow "
        "joiner when one comes).")],
    "kv_events_linger_s": Annotated[float, typer.Option(
        "--kv-events-linger-s", rich_help_panel=_L, help="Keep answering replay requests "
        "this long after the last batch.")],
    "realtime": Annotated[float | None, typer.Option(
        "--realtime", metavar="SPEED", rich_help_panel=_L, help="Replay on the wall clock: "
        "1 = the simulated clock's pace, 10 = ten times faster. [default: as fast as "
        "possible]", show_default=False)],
    "metrics": Annotated[str | None, typer.Option(
        "--metrics", metavar="FILE", rich_help_panel=_L, help="Write vLLM's Prometheus "
        "metrics as text exposition snapshots, one per --metrics-interval-s of simulated "
        "time, each stamped with it.")],
    "metrics_interval_s": Annotated[float, typer.Option(
        "--metrics-interval-s", rich_help_panel=_L,
        help="Simulated seconds between metrics snapshots.")],
    "metrics_port": Annotated[int | None, typer.Option(
        "--metrics-port", metavar="PORT", rich_help_panel=_L,
        help="Serve vLLM's metrics at http://0.0.0.0:PORT/metrics during a --realtime "
        "replay.")],
    "enable_mfu_metrics": Annotated[bool, typer.Option(
        "--enable-mfu-metrics/--no-enable-mfu-metrics", rich_help_panel=_L,
        help="vLLM's MFU metrics: each engine step's FLOPs and bytes per GPU as vLLM's "
        "perf.py counts them, in vllm:estimated_*_per_gpu_total (needs --model or "
        "--model-config, and --metrics or --metrics-port).")],
}
DEFAULTS = {name: getattr(D, name, None) for name in OPTIONS}


def live_options(values: dict[str, Any]) -> LiveOptions:
    return LiveOptions(**{k: v for k, v in values.items() if k != "metrics"})


def with_live_options() -> Callable[[Callable], Callable]:
    """A Typer command decorator: the live options after the command's own; the command
    receives `live: LiveOptions` and `metrics: str | None`."""
    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn, eval_str=True)
        own = [p for p in sig.parameters.values() if p.name not in ("live", "metrics")]
        extra = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=alias,
                                   default=DEFAULTS[name]) for name, alias in OPTIONS.items()]
        params = own + extra

        @functools.wraps(fn)
        def command(**kw: Any) -> Any:
            values = {name: kw.pop(name) for name in OPTIONS}
            return fn(**kw, live=live_options(values), metrics=values["metrics"])

        command.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params])
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command
    return wrap
