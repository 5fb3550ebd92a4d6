"""`LiveOptions`: how a replay (or a cluster) stands in for a live vLLM: KV events over ZMQ,
the wall-clock pace, vLLM's metrics. They change nothing the replay computes (a trace's config
line cannot set them, `kvcli stats` has no use for them), hence their own dataclass beside
`ReplayOptions`. Defaults are vLLM's `KVEventsConfig` where it has the knob."""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvcore.errors import InputError, path_label
from kvcore.live.endpoints import check_endpoint, is_bind_endpoint

DEFAULT_ENDPOINT = "tcp://*:5557"   # vLLM's KVEventsConfig.endpoint
MIN_METRICS_INTERVAL_S = 0.001      # a metrics snapshot a simulated ms at most
MAX_WAIT_S = 86_400.0              # --kv-events-wait-s / --kv-events-linger-s: a day
MIN_REALTIME = 0.001               # --realtime: a thousandth of the simulated pace


@dataclass(frozen=True, slots=True)
class LiveOptions:
    kv_events_endpoint: str | None = None       # None: no publishing
    kv_events_replay_endpoint: str | None = None
    kv_events_topic: str = ""
    kv_events_hwm: int = 100_000
    kv_events_buffer_steps: int = 10_000
    kv_events_wait_s: float = 5.0           # for a first subscriber, before the first batch
    kv_events_linger_s: float = 0.0         # answering replay requests after the last batch
    realtime: float | None = None           # SPEED: simulated seconds per wall second
    metrics_interval_s: float = 10.0        # simulated seconds between snapshots
    metrics_port: int | None = None         # serve /metrics during a realtime replay
    enable_mfu_metrics: bool = False        # vLLM's: perf.py's counts in the metrics

    @property
    def publishes(self) -> bool:
        return self.kv_events_endpoint is not None

    def zmq_sockets(self, ranks: int) -> int:
        """The ZMQ sockets the publishers of `ranks` engines make in their shared context (its
        socket cap: `LiveRun`)."""
        return ranks * self._rank_footprint()[0]

    def open_files(self, ranks: int) -> int:
        """The files the publishers of `ranks` engines hold open, their context's included
        (the open-file check: `kvcli/open_files.py`)."""
        return CONTEXT_FILES + ranks * self._rank_footprint()[1] if self.publishes else 0

    def _rank_footprint(self) -> tuple[int, int]:
        if self.kv_events_endpoint is None:
            return 0, 0
        return rank_footprint(self.kv_events_endpoint, self.kv_events_replay_endpoint)

    def check(self, ranks: int = 1, metrics_file: bool = False) -> None:
        """Refuse values that cannot work, one field at a time; `metrics_file`: a metrics FILE
        is written (its interval has an effect)."""
        if self.kv_events_endpoint is not None:
            check_endpoint(self.kv_events_endpoint, "kv_events_endpoint", ranks=ranks,
                           connects=not is_bind_endpoint(self.kv_events_endpoint))
        if self.kv_events_replay_endpoint is not None:
            if self.kv_events_endpoint is None:
                raise InputError("needs kv_events_endpoint (the replay socket resends what "
                                 "the publisher sent)", field="kv_events_replay_endpoint")
            check_endpoint(self.kv_events_replay_endpoint, "kv_events_replay_endpoint",
                           ranks=ranks)
            if self.kv_events_replay_endpoint == self.kv_events_endpoint:
                raise InputError("the same endpoint as kv_events_endpoint",
                                 field="kv_events_replay_endpoint")
        check_topic(self.kv_events_topic, "kv_events_topic")
        # ZMQ's high-water marks are C ints (the replay socket's is 2 x (steps + 1)): more
        # raised OverflowError with a traceback when the socket opened
        for name, lo, hi in (("kv_events_hwm", 0, 2**31 - 1),
                             ("kv_events_buffer_steps", 1, 2**30 - 2)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise InputError(f"must be an integer from {lo} to {hi:,}, got {v!r}",
                                 field=name)
        for name in ("kv_events_wait_s", "kv_events_linger_s"):
            _finite(getattr(self, name), name, allow_zero=True)
            if getattr(self, name) > MAX_WAIT_S:    # (1e308 s: blocked without a word)
                raise InputError(f"must be at most {MAX_WAIT_S:,.0f} s (a day), got "
                                 f"{getattr(self, name)!r}", field=name)
        if self.kv_events_linger_s and self.kv_events_replay_endpoint is None:
            raise InputError("has no effect without kv_events_replay_endpoint (it keeps the "
                             "replay socket answering)", field="kv_events_linger_s")
        if self.realtime is not None:
            _finite(self.realtime, "realtime", allow_zero=False)
            if self.realtime < MIN_REALTIME:        # (1e-9: a second of simulation took 30 years)
                raise InputError(f"must be at least {MIN_REALTIME:g} (a thousandth of the "
                                 f"simulated pace), got {self.realtime!r}", field="realtime")
        _finite(self.metrics_interval_s, "metrics_interval_s", allow_zero=False)
        if self.metrics_interval_s < MIN_METRICS_INTERVAL_S:
            # (1e-300: the snapshot clock's sum stopped moving and snapshots were written
            # forever, 3.6 GB in 10 minutes, deaf to SIGTERM in the end-of-run flush)
            raise InputError(f"must be at least {MIN_METRICS_INTERVAL_S} s of simulated time, "
                             f"got {self.metrics_interval_s!r}", field="metrics_interval_s")
        if self.metrics_port is not None:
            p = self.metrics_port
            if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= 65535:
                raise InputError(f"must be a port 1..65535, got {p!r}", field="metrics_port")
            if self.realtime is None:
                raise InputError("needs realtime: without a pace the replay is over before a "
                                 "scrape (write snapshots with metrics FILE)",
                                 field="metrics_port")
        self._check_used(metrics_file)
        if self.enable_mfu_metrics and not metrics_file and self.metrics_port is None:
            raise InputError("has no effect without --metrics FILE or --metrics-port",
                             field="enable_mfu_metrics")

    def _check_used(self, metrics_file: bool) -> None:
        """An option moved from its default where nothing reads it is refused, as
        kv_events_linger_s is: the user asked for something the run would not do."""
        needs = (("kv_events_endpoint", self.kv_events_endpoint is not None,
                  ("kv_events_topic", "kv_events_hwm", "kv_events_wait_s")),
                 ("kv_events_replay_endpoint", self.kv_events_replay_endpoint is not None,
                  ("kv_events_buffer_steps",)),
                 ("metrics FILE", metrics_file, ("metrics_interval_s",)))
        for need, present, names in needs:
            for name in names:
                if not present and getattr(self, name) != getattr(_DEFAULTS, name):
                    raise InputError(f"has no effect without {need}", field=name)


_DEFAULTS = LiveOptions()


def check_topic(topic: str, field: str) -> None:
    """A topic goes on the wire as UTF-8 (vLLM's publisher encodes it so too): a command
    line's non-UTF-8 byte ended in a UnicodeEncodeError traceback when the socket opened."""
    try:
        topic.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"must be UTF-8 text, got '{path_label(topic)}'", field=field) from None

# The files a publishers' ZMQ context holds besides its sockets' (measured with pyzmq): 1 when
# it is made (its own mailbox), 4 more with the first socket (its I/O thread's and its
# reaper's mailbox and poller). (4 were counted: the first was missed.)
CONTEXT_FILES = 5


def rank_footprint(endpoint: str, replay_endpoint: str | None) -> tuple[int, int]:
    """(ZMQ sockets, open files) of one rank's publisher (`ZmqPublisher`), the one count the
    context's socket cap and the open-file check both read. Sockets: the PUB; a connecting
    PUB's monitor pair (pyzmq's end and the one libzmq makes, which counts against the cap
    too); the replay ROUTER. Files: a mailbox a socket, and a listener or a connection an
    endpoint. Measured with pyzmq (the files a rank adds under /proc/self/fd; the sockets as
    the least MAX_SOCKETS its build passes): tcp or ipc bound 1 socket, 2 files (4 and 2 with
    a replay endpoint); tcp connected 3 sockets, 4 files once the connection is up (6 and 4
    with a replay endpoint)."""
    connects = not is_bind_endpoint(endpoint)
    replays = replay_endpoint is not None
    sockets = 1 + 2 * connects + replays
    return sockets, sockets + 1 + replays


def _finite(v: float, name: str, *, allow_zero: bool) -> None:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and (
        v >= 0 if allow_zero else v > 0)
    if not ok:
        raise InputError(f"must be a finite number {'>= 0' if allow_zero else '> 0'}, "
                         f"got {v!r}", field=name)
