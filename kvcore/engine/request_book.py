"""`RequestBook`: a replay's request records, the live ones by id, the rest folded away.

A record lives from its request's arrival to its finish (or rejection); then it is *retired*:
what the summary needs of it is folded into a few columns (its latencies when it counts, its
queueing delay, its CPU-tier hits) and its request line, when there is a `--requests` file, is
written as soon as every request before it in arrival order has its own. So a replay holds the
records of the requests in flight (and the lines of those that finished while an earlier one
runs), not one per request of the trace: 0.3 KB a request before, 8 bytes a column value now.
Exact all the same: the summary's distributions sort their values (the order they were folded
in does not matter), its sums are of integers, and the lines come out in arrival order.

A cluster's replicas and a live replay keep every record (``keep``): their reports and metrics
read records after the finish.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping
from typing import IO

import orjson

from kvcore.engine.latency import KEYS
from kvcore.engine.request_log import RequestRecord
from kvcore.traces import TraceRequest


class RequestBook:
    """The records of a replay (see the module docstring). ``live`` is the context's
    ``records``: id -> record of every request arrived and not retired."""

    __slots__ = (
        "counted_cpu_hits",
        "cpu_hits",
        "delays",
        "gpu_hits",
        "keep",
        "latency",
        "latency_applies",
        "lines",
        "live",
        "next_line",
        "opened",
        "out",
        "settled",
        "warmup_start",
    )

    def __init__(self, out: IO[bytes] | None, warmup_start: int, latency_applies: bool,
                 keep: bool) -> None:
        self.live: dict[str, RequestRecord] = {}
        self.out = out                      # the request lines' file (None: no lines)
        self.warmup_start = warmup_start
        self.latency_applies = latency_applies
        self.keep = keep
        self.opened = 0                     # records opened: the next arrival's position
        # Lines of retired records waiting for an earlier one (position -> line) and the
        # position of the next line to write.
        self.lines: dict[int, bytes] = {}
        self.next_line = 0
        # The summary's columns: the counted finished requests' latencies (None left out), every
        # scheduled request's queueing delay (ms, `load_check`), the CPU tier's hit sums.
        self.latency: dict[str, array] = {k: array("d") for k in KEYS}
        self.delays = array("d")
        self.gpu_hits = self.cpu_hits = self.counted_cpu_hits = 0
        self.settled = False                # the open records folded (`settle`)

    def traces(self) -> LiveTraces:
        """The trace requests of the open records by id (the hasher's ``traces``)."""
        return LiveTraces(self.live)

    def open(self, tr: TraceRequest, pos: int | None = None) -> RequestRecord:
        """A record for `tr`, arrived at position `pos` (default: the next one)."""
        if pos is None:
            pos = self.opened
        self.opened = max(self.opened, pos + 1)
        rec = self.live[tr.id] = RequestRecord(tr, pos)
        return rec

    def arrived(self, tr: TraceRequest, pos: int | None = None) -> RequestRecord:
        """The record of `tr`, which arrives now: the one a cluster's replica opened when the
        request was routed there, else a new one (`open`)."""
        return self.live.get(tr.id) or self.open(tr, pos)

    def retire(self, rid: str) -> None:
        """Request `rid` finished or was rejected: nothing changes its record any more."""
        if self.keep:
            return
        rec = self.live.pop(rid)
        self._fold(rec)
        if self.out is not None:
            self.lines[rec.pos] = _line(rec)
            self._write_ready()

    def settle(self) -> None:
        """Fold the records still open, once (the load check and the summary both ask, after
        the last step), so that the columns hold every request the replay reached."""
        if self.settled:
            return
        self.settled = True
        for rec in self.live.values():
            self._fold(rec)

    def write_lines(self, interrupted: bool, unreached: Iterable[TraceRequest] = ()) -> None:
        """The end, with a lines file: every line left, in arrival order. After Ctrl-C only
        those of requests the replay reached; else also one for each of `unreached` (those that
        never arrived, in arrival order: a replay stopped by max_steps)."""
        out = self.out
        assert out is not None
        lines = self.lines
        for rec in self.live.values():
            if not interrupted or rec.first_scheduled_step is not None \
                    or rec.rejected is not None:
                lines[rec.pos] = _line(rec)
        for pos in sorted(lines):
            out.write(lines[pos])
        lines.clear()
        if not interrupted:
            for tr in unreached:
                out.write(_line(RequestRecord(tr, self.opened)))
                self.opened += 1

    def _write_ready(self) -> None:
        lines, out = self.lines, self.out
        pos = self.next_line
        while pos in lines:
            out.write(lines.pop(pos))     # type: ignore[union-attr]
            pos += 1
        self.next_line = pos

    def _fold(self, rec: RequestRecord) -> None:
        if rec.first_scheduled_ms is not None:
            self.delays.append(rec.first_scheduled_ms - rec.tr.arrival_ms)
        counted = rec.pos >= self.warmup_start
        if self.latency_applies and counted and rec.finish_ms is not None:
            for k, v in rec.latency().items():
                if v is not None:
                    self.latency[k].append(v)
        extra = rec.extra
        if extra is not None:
            self.gpu_hits += extra["gpu_hit_tokens"]
            self.cpu_hits += extra["cpu_hit_tokens"]
            if counted:
                self.counted_cpu_hits += extra["lookups"][0][2]


def _line(rec: RequestRecord) -> bytes:
    """The record's request line (`kvcli replay --requests`)."""
    return orjson.dumps(rec.line()) + b"\n"


class LiveTraces(Mapping[str, TraceRequest]):
    """Request id -> trace request, for the requests whose records are open."""

    __slots__ = ("records",)

    def __init__(self, records: dict[str, RequestRecord]) -> None:
        self.records = records

    # (Mapping's get is overloaded on its default's type; this one takes a request or None)
    def get(self, rid: str,  # type: ignore[override]
            default: TraceRequest | None = None) -> TraceRequest | None:
        rec = self.records.get(rid)
        return default if rec is None else rec.tr

    def __getitem__(self, rid: str) -> TraceRequest:
        return self.records[rid].tr

    def __iter__(self) -> Iterator[str]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)
