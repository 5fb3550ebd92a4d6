"""Opening a live run for a command: the extra's check (pyzmq, msgspec, prometheus_client),
then `kvcore.live.session.LiveRun` with kvcli's warning line."""

from __future__ import annotations

from typing import IO

from kvcli import output
from kvcore.errors import InputError
from kvcore.live.options import LiveOptions


def require_live() -> None:
    """The 'live' extra's libraries, or one line saying how to install them."""
    missing = []
    for module, package in (("zmq", "pyzmq"), ("msgspec", "msgspec"),
                            ("prometheus_client", "prometheus_client")):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        raise InputError(f"needs {', '.join(missing)}: pip install 'kvcli[live]'",
                         field="kv_events_endpoint")


def open_live(opts: LiveOptions, metrics_out: IO[bytes] | None, ranks: int = 1):
    require_live()
    from kvcore.live.session import LiveRun

    return LiveRun(opts, ranks=ranks, metrics_out=metrics_out, warn=output.warn)


def run_listen(endpoint: str, replay_endpoint: str | None, topic: str, count: int | None,
               idle_timeout_s: float, first_seq: int) -> int:
    """`kvcli events listen`: the batches as JSON lines on stdout, the tally on stderr."""
    import math

    if count is not None and count < 1:
        raise InputError(f"must be >= 1, got {count}", field="count")
    if not (math.isfinite(idle_timeout_s) and idle_timeout_s >= 0):
        raise InputError(f"must be a finite number >= 0, got {idle_timeout_s!r}",
                         field="idle_timeout_s")
    if first_seq < 0:
        raise InputError(f"must be >= 0, got {first_seq}", field="first_seq")
    require_live()
    from kvcore.live.subscriber import listen

    stats: dict = {}
    output.emit_lines(listen(endpoint, replay_endpoint=replay_endpoint, topic=topic,
                             idle_timeout_s=idle_timeout_s, count=count, first_seq=first_seq,
                             stats=stats), flush_each=True)
    gaps = (f", {stats['gaps']} gap(s) of {stats['missing']:,} batch(es) not recovered"
            if stats.get("gaps") else "")
    output.message(f"{stats.get('batches', 0):,} batch(es), {stats.get('replayed', 0):,} "
                   f"from the replay socket{gaps}")
    return 0
