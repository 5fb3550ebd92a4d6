"""`LiveRun`: the live side of one replay or cluster: the ZMQ publishers (one per engine rank,
ports offset as vLLM offsets them for data-parallel ranks), the pacer, vLLM's metrics (a
snapshot file, an HTTP endpoint), built before the replay and closed after it.

Its sink (`live_events.LiveEvents`) calls `step` at the end of every engine step: the
snapshots due, the step's wall-clock wait, the batch to the file (if any), to the publisher,
to the metrics.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import IO, Any

from kvcore.engine.vllm_events import VllmEvents
from kvcore.errors import InputError
from kvcore.live.endpoints import offset_endpoint_port
from kvcore.live.live_events import LiveEvents
from kvcore.live.options import LiveOptions
from kvcore.live.pacer import Pacer


class LiveRun:
    def __init__(self, opts: LiveOptions, *, ranks: int = 1, metrics_out: IO[bytes] | None = None,
                 warn: Callable[[str], None] | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        opts.check(ranks, metrics_file=metrics_out is not None)
        self.opts = opts
        self._tell = warn or (lambda msg: None)
        self.say = say or (lambda msg: None)      # a message that is no warning (stderr)
        self.said: list[str] = []       # the warnings, for the summary's (the run's JSON)
        # Ctrl-C (or SIGTERM) ended the linger: the replay is complete, but the command's exit
        # code still says the user stopped it (130 / 143; it was 0)
        self.linger_interrupted = False
        self.publishers: list[Any] = []
        self.zctx: Any = None
        self.server: Any = None
        self.engines: list[Any] = []          # per rank, once attached
        self.families: Any = None
        self.registry: Any = None
        self.snapshots: Any = None
        self.ranks = ranks
        self.checked = False                # `check_engines` ran (by its caller or `attach`)
        self.size_note: str | None = None   # what `check_engines` said of the file's size
        self.mfu_shape: Any = None          # perf.py's model, with enable_mfu_metrics
        self.mfu: dict[int, Any] = {}       # rank: its `mfu_metrics.MfuSteps`
        self.ended = False                  # `end_outputs` ran
        try:
            if opts.publishes:
                self._open_publishers(ranks)
            self.pacer = (Pacer(opts.realtime, self._idle, self.say)
                          if opts.realtime is not None else None)
            if metrics_out is not None or opts.metrics_port is not None:
                self._open_metrics(metrics_out)
        except BaseException:
            self.close(final=False)
            raise

    def _open_publishers(self, ranks: int) -> None:
        import zmq

        from kvcore.live.publisher import ZmqPublisher

        o = self.opts
        self.zctx = zmq.Context()
        # a context opens 1,023 sockets by default and a rank takes up to 4 (its PUB, the
        # monitor's pair of a connecting PUB, the replay ROUTER: `rank_footprint`): a cluster
        # of 1,100 replicas failed with a traceback. The cap must be set before the first
        # socket is made.
        needed = o.zmq_sockets(ranks) + 16
        limit = self.zctx.get(zmq.SOCKET_LIMIT)
        if needed > limit:
            raise InputError(f"{ranks:,} publishers need up to {needed:,} ZMQ sockets, more than "
                             f"this libzmq's limit of {limit:,}: publish fewer replicas",
                             field="kv_events_endpoint")
        self.zctx.set(zmq.MAX_SOCKETS, max(needed, self.zctx.get(zmq.MAX_SOCKETS)))
        for r in range(ranks):
            self.publishers.append(ZmqPublisher(
                self.zctx, offset_endpoint_port(o.kv_events_endpoint, r),  # type: ignore[arg-type]
                replay_endpoint=offset_endpoint_port(o.kv_events_replay_endpoint, r),
                topic=o.kv_events_topic, hwm=o.kv_events_hwm,
                buffer_steps=o.kv_events_buffer_steps, rank=r, wait_s=o.kv_events_wait_s,
                warn=self.warn))

    def _open_metrics(self, out: IO[bytes] | None) -> None:
        """The registry, its snapshot file and its HTTP server; the metrics themselves come
        with the first replay attached (they need its options)."""
        from prometheus_client import CollectorRegistry

        from kvcore.live.snapshots import Snapshots

        self.registry = registry = CollectorRegistry()
        self.engines = [None] * self.ranks
        if out is not None:
            self.snapshots = Snapshots(out, registry, self.opts.metrics_interval_s * 1000.0)
        if self.opts.metrics_port is not None:
            from prometheus_client import start_http_server

            try:
                self.server = start_http_server(self.opts.metrics_port, registry=registry)
            except OSError as err:
                raise InputError(f"port {self.opts.metrics_port}: {err.strerror or err}",
                                 field="metrics_port") from None

    def warn(self, message: str) -> None:
        self.said.append(message)
        self._tell(message)

    def _idle(self, seconds: float) -> None:
        """The pacer's wait: the publishers answer replay requests meanwhile."""
        if not self.publishers:
            time.sleep(seconds)
            return
        share = seconds / len(self.publishers)
        for pub in self.publishers:
            pub.service(share)

    # -- per replay / replica --------------------------------------------------------------------
    def sink(self, rank: int, file: VllmEvents | None) -> LiveEvents:
        """Engine `rank`'s vLLM sink (`ReplayContext(vllm_sink=...)`, or its event sink with
        ``--events-format vllm`` writing `file`)."""
        return LiveEvents(self, rank, file)

    def check_engines(self, cfg: Any, trace: Any, clock: Any) -> None:
        """What the metrics refuse of the engines' resolved options (`cfg` on `trace`, at
        `clock`: every rank's alike), before any engine is built: a cluster calls it once its
        options are resolved (in `attach` the refusal came after every replica was built:
        ~5 s at 40,000 replicas); `attach` calls it where nobody did."""
        self.checked = True
        if not self.engines:
            return
        if cfg.mode == "cache":
            # no request runs there, no step: zeros beside prefix-cache counts (queries
            # 147,456 against prompt tokens 0), which looked like a measurement
            raise InputError("engine mode only: cache mode runs no scheduler and no steps for "
                             "vLLM's metrics to measure",
                             field="metrics" if self.snapshots is not None else "metrics_port")
        if self.opts.enable_mfu_metrics:
            from kvcore.live.mfu_metrics import mfu_shape

            self.mfu_shape = mfu_shape(cfg)
        if self.snapshots is not None:
            from kvcore.live.snapshots import decode_floor_ms

            timed = cfg.arrivals == "timestamp"
            self.size_note = self.snapshots.check_span(
                trace.last_arrival_ms if timed else 0.0, self.ranks,
                floor_ms=decode_floor_ms(clock, trace, cfg))

    def attach(self, rank: int, ctx: Any, loop: Any) -> Any:
        """Point engine `rank`'s metrics at its replay; returns the loop listener they need
        (None without metrics)."""
        if not self.checked:
            self.check_engines(ctx.cfg, ctx.trace, ctx.cost)
        if not self.engines:
            return None
        from kvcore.live.metrics import EngineMetrics, Families

        ctx.book.keep = True    # the metrics read a request's record after its finish
        cfg = ctx.cfg
        if self.size_note is not None and rank == 0:     # one file for all ranks: said once
            self.warn(self.size_note)
        if self.families is None:
            longest = ctx.trace.max_total_tokens or 1
            self.families = Families(self.registry, cfg.max_model_len or longest, ctx.offload,
                                     cfg.num_speculative_tokens)
        em = EngineMetrics(self.families, cfg.model or "kvcli", rank)
        em.attach(ctx, getattr(loop, "sched", None))
        self.engines[rank] = em
        if self.mfu_shape is not None:
            from kvcore.live.mfu_metrics import MFU_NAMES, MfuSteps

            self.mfu[rank] = MfuSteps(self.mfu_shape, tuple(em.m[n] for n in MFU_NAMES), loop)
        return em

    def step(self, rank: int, ts_s: float, events: list, file: VllmEvents | None) -> None:
        t_ms = ts_s * 1000.0
        if self.snapshots is not None:
            self.snapshots.due(t_ms)
        if events and self.publishers and not self.publishers[rank].waited:
            # the wait for a subscriber (kv_events_wait_s) before the first batch is not the
            # replay falling behind its pace: the pace starts after it
            waited_from = time.monotonic()
            # every replica's publisher at once, to one deadline: one after the other, 8
            # replicas waited up to 8 x kv_events_wait_s (40 s by default)
            deadline = waited_from + self.opts.kv_events_wait_s
            for pub in self.publishers:
                if not pub.waited:
                    pub.wait_for_subscriber(deadline)
            if self.pacer is not None:
                self.pacer.pause(time.monotonic() - waited_from)
        if self.pacer is not None:
            self.pacer.wait_until(t_ms)
        if file is not None:
            file.batch(ts_s, events)
        if events and self.publishers:
            self.publishers[rank].publish(round(ts_s, 9), events)
        if self.engines and self.engines[rank] is not None:
            if self.mfu:        # (one vLLM event batch a batch processed)
                self.mfu[rank].processed()
            self.engines[rank].update()

    def end_outputs(self, end_ms: float, interrupted: bool = False) -> None:
        """The metrics' last update and the snapshot file's last snapshot (and its
        ``# kvcli interrupted`` line); once. The replay calls it with its other outputs' last
        records, signals held (a second Ctrl-C a few ms after the first fired after those and
        before `close`: the file ended without the line, like a complete run's)."""
        if self.ended:
            return
        self.ended = True
        for mfu in self.mfu.values():
            mfu.finish()
        for em in self.engines:
            if em is not None:
                em.update()
        if self.snapshots is not None:
            self.snapshots.end(end_ms, interrupted)

    def close(self, end_ms: float | None = None, final: bool = True,
              interrupted: bool = False) -> dict:
        """The last snapshot (at `end_ms`; marked when the run was `interrupted`), the replay
        socket's linger (not after an interrupted run: Ctrl-C waited out the whole linger, up
        to a day, its outputs not yet written), every socket closed; the warnings; returns the
        summary's `live` object."""
        out: dict[str, Any] = {}
        if final:
            if end_ms is not None:
                self.end_outputs(end_ms, interrupted)
            if self.snapshots is not None and end_ms is not None:
                out["metrics_snapshots"] = self.snapshots.count
            if self.publishers and self.opts.kv_events_linger_s > 0 and not interrupted:
                self.say(f"kv events: the replay socket stays up "
                         f"{self.opts.kv_events_linger_s:g} s for late subscribers "
                         "(kv_events_linger_s; Ctrl-C ends it)")
                deadline = time.monotonic() + self.opts.kv_events_linger_s
                # Ctrl-C ends the linger, not the run: the replay is complete, its summary
                # still comes (it was lost: the interrupt skipped it); the caller exits 130
                try:
                    while (left := deadline - time.monotonic()) > 0:
                        self._idle(min(left, 0.1))
                except KeyboardInterrupt:
                    self.linger_interrupted = True
        for pub in self.publishers:
            if final and pub.dropped:
                self.warn(f"kv events: {pub.dropped:,} of {pub.seq:,} batches on "
                          f"{pub.endpoint} were dropped: a subscriber fell kv_events_hwm "
                          f"({pub.hwm:,}) messages behind (pace the replay with realtime, or "
                          "raise kv_events_hwm" + ("; the replay socket resends the last "
                                                   "batches)" if pub.replay is not None else
                                                   ")"))
            pub.close()
        if self.publishers:
            out["kv_events"] = [p.stats() for p in self.publishers]
        if self.zctx is not None:
            self._term(final)
        if self.server is not None:
            with contextlib.suppress(Exception):
                server = self.server[0] if isinstance(self.server, tuple) else self.server
                server.shutdown()
                server.server_close()
            self.server = None
        if final and self.pacer is not None:
            out["realtime_max_behind_s"] = round(self.pacer.max_behind_s, 3)
            if self.pacer.max_behind_s > 1.0:
                self.warn(f"the replay fell up to {self.pacer.max_behind_s:.1f} s behind "
                          f"realtime {self.opts.realtime:g} (this machine replays slower than "
                          "that pace)")
        return out

    def _term(self, final: bool) -> None:
        """End the ZMQ context: it waits for the queued batches to leave (each socket's
        CLOSE_TIMEOUT_S). Those still queued then are dropped by ZMQ, which no count sees
        (1,100 of 2,806 batches to a subscriber that did not read, with "dropped 0"): a close
        that took the whole timeout says so. Ctrl-C here ends the wait, not the run: its
        summary still comes (it was lost, the outputs of a finished replay with it)."""
        from kvcore.live.publisher import CLOSE_TIMEOUT_S

        started = time.monotonic()
        try:
            self.zctx.term()
        except KeyboardInterrupt:
            if final:
                self.warn("kv events: interrupted while the last queued batches were leaving: "
                          "a subscriber may have missed them")
        else:
            if final and time.monotonic() - started >= CLOSE_TIMEOUT_S - 0.05:
                self.warn(f"kv events: the last batches were still queued after "
                          f"{CLOSE_TIMEOUT_S:g} s (a subscriber not reading?) and were "
                          "discarded: it missed them (not counted in dropped)")
        self.zctx = None
