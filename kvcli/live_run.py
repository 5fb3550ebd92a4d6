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
