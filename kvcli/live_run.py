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

    return LiveRun(opts, ranks=ranks, metrics_out=metrics_out, warn=output.warn,
                   say=output.message)


def linger_exit(live) -> int:
    """A run's exit code once its work is complete and said: the interrupt's (130, 143) when
    Ctrl-C or SIGTERM ended the replay socket's linger (the outputs are whole), else 0."""
    if live is not None and live.linger_interrupted:
        output.message("interrupted while the replay socket lingered: the replay and its "
                       "outputs are complete")
        return output.interrupt_code()
    return 0


def run_listen(endpoint: str, replay_endpoint: str | None, topic: str, count: int | None,
               idle_timeout_s: float, first_seq: str | int, live_view: bool = False) -> int:
    """`kvcli events listen`: the batches as JSON lines on stdout (`live_view`: a live
    summary instead), the tally on stderr."""
    import math

    if count is not None and count < 1:
        raise InputError(f"must be >= 1, got {count}", field="count")
    if not (math.isfinite(idle_timeout_s) and idle_timeout_s >= 0):
        raise InputError(f"must be a finite number >= 0, got {idle_timeout_s!r}",
                         field="idle_timeout_s")
    from kvcore.live.options import check_topic
    from kvcore.live.subscriber import check_first_seq

    check_topic(topic, "topic")
    seq = check_first_seq(first_seq)
    require_live()
    from kvcore.live.endpoints import check_endpoint, listener_binds, unresolved_note
    from kvcore.live.subscriber import REPLAY_TIMEOUT_S, listen

    # (a name that does not resolve yet may later: said, not refused; the tally said only
    # "0 batch(es)")
    for ep, field, connects in ((endpoint, "endpoint", not listener_binds(endpoint)),
                                (replay_endpoint, "replay_endpoint", True)):
        if ep is not None:
            check_endpoint(ep, field, connects=connects)
            if connects and (note := unresolved_note(ep)):
                output.warn(note)
    stats: dict = {}
    batches = listen(endpoint, replay_endpoint=replay_endpoint, topic=topic,
                     idle_timeout_s=idle_timeout_s, count=count, first_seq=seq,
                     stats=stats)
    if live_view:
        tally = ListenTally()
        output.emit_live(batches, tally.fold, tally.table)
    else:
        output.emit_lines(batches, flush_each=True)
    gaps = (f", {stats['gaps']} gap(s) of {stats['missing']:,} batch(es) not recovered"
            if stats.get("gaps") else "")
    restarts = (f", the publisher started again {stats['restarts']} time(s) (its numbers "
                "from 0 again)" if stats.get("restarts") else "")
    skipped = (f", {stats['skipped']:,} numbered below --first-seq {seq:,} skipped"
               if stats.get("skipped") else "")
    output.message(f"{stats.get('batches', 0):,} batch(es), {stats.get('replayed', 0):,} "
                   f"from the replay socket{gaps}{restarts}{skipped}")
    if stats.get("misframed"):
        # (a publisher framed otherwise looked like silence: "0 batch(es)", exit 0)
        output.warn(f"{stats['misframed']:,} message(s) were not a KV event batch's three "
                    "frames (topic, 8-byte sequence number, payload): skipped; is the endpoint "
                    "a vLLM KV event publisher?")
    if stats.get("unanswered"):
        output.warn(f"the replay socket did not answer {stats['unanswered']} request(s) for a "
                    f"gap in {REPLAY_TIMEOUT_S:g} s (gone with its publisher, or no vLLM replay "
                    "socket there): those batches are reported as gaps")
    return 0


class ListenTally:
    """What `kvcli events listen` shows live on a terminal: batches, events by kind, blocks
    stored and removed per rank and medium, the last sequence number and time, gaps."""

    def __init__(self) -> None:
        self.batches = 0
        self.last_seq: int | None = None
        self.last_ts: float | None = None
        self.gaps = 0
        self.missing = 0
        # (rank, medium) -> [batches, stored blocks, removed blocks, clears]
        self.rows: dict[tuple[str, str], list[int]] = {}

    def fold(self, rec: dict) -> None:
        if "gap" in rec:
            first, last = rec["gap"]
            self.gaps += 1
            self.missing += last - first + 1
            return
        if "restart" in rec:
            return
        self.batches += 1
        self.last_seq = rec.get("seq")
        self.last_ts = rec.get("ts")
        rank = str(rec.get("data_parallel_rank"))
        for ev in rec.get("events", ()):
            medium = str(ev.get("medium") or "-")
            row = self.rows.setdefault((rank, medium), [0, 0, 0, 0])
            kind = ev.get("type")
            if kind == "BlockStored":
                row[1] += len(ev.get("block_hashes") or ())
            elif kind == "BlockRemoved":
                row[2] += len(ev.get("block_hashes") or ())
            elif kind == "AllBlocksCleared":
                row[3] += 1

    def table(self) -> output.Table:
        ts = "-" if self.last_ts is None else f"{self.last_ts:.3f}"
        gaps = f"; {self.gaps} gap(s), {self.missing} batch(es) missing" if self.gaps else ""
        return output.Table(
            f"{self.batches:,} batch(es), last seq {self.last_seq}, last ts {ts} s{gaps}",
            ("rank", "medium", "blocks stored", "blocks removed", "clears"),
            [(r, m, v[1], v[2], v[3]) for (r, m), v in sorted(self.rows.items())])
