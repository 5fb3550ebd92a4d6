"""`ZmqPublisher`: a replay's vLLM KV event batches published as vLLM 0.33's `ZmqEventPublisher`
publishes them (docs/live.md).

* the PUB side: multipart ``(topic, 8-byte big-endian sequence number, msgpack payload)``,
  sequence numbers from 0, bind or connect by vLLM's rule (`endpoints.py`), send high-water
  mark `hwm`. The socket is an XPUB with ``XPUB_NODROP``, which a SUB cannot tell from a PUB
  but which says when a slow subscriber made a message drop (a PUB drops in silence): such a
  batch is counted, kept for the replay socket, and the end of the run warns;
* the replay socket (optional): a ROUTER, always bound, that answers a request
  ``(identity, b"", start_seq as 8 bytes big-endian)`` with every buffered batch from
  ``start_seq`` on, as ``(identity, b"", topic, seq, payload)``, then vLLM's end marker
  ``(identity, b"", b"", -1 as 8 bytes, b"")``; the last `buffer_steps` batches are kept;
* before the first batch it waits up to `wait_s` for a subscription (ZMQ's slow joiner: a
  PUB that connects to a bound SUB would drop what it sends before the link is up). When it
  connects, pyzmq's socket monitor says whether the connection came up, for the warning.

One thread: the replay socket is served whenever a batch goes out and while the pacer sleeps
(`service`), and for `linger_s` after the last batch (`close`). Every wait has a deadline.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

import zmq

from kvcore.errors import InputError
from kvcore.live.endpoints import is_bind_endpoint, is_ipv6
from kvcore.live.wire import END_SEQ, Encoder

CLOSE_TIMEOUT_S = 5.0   # how long closing waits for queued messages to leave


class ZmqPublisher:
    def __init__(self, zctx: zmq.Context, endpoint: str, *, replay_endpoint: str | None = None,
                 topic: str = "", hwm: int = 100_000, buffer_steps: int = 10_000,
                 rank: int = 0, wait_s: float = 5.0,
                 warn: Callable[[str], None] | None = None) -> None:
        self.endpoint = endpoint
        self.replay_endpoint = replay_endpoint
        self.topic = topic.encode("utf-8")
        self.rank = rank                    # the batches' data_parallel_rank
        self.hwm = hwm
        self.wait_s = wait_s
        self.warn = warn or (lambda msg: None)
        self.buffer: deque[tuple[int, bytes]] = deque(maxlen=buffer_steps)
        self.seq = 0
        self.dropped = 0
        self.subscriptions = 0              # subscribe minus unsubscribe messages seen
        self.foreign: set[bytes] = set()     # topics subscribed to that this one is not
        self.replays = 0                    # replay requests answered
        self.waited = False
        self.connects = is_bind_endpoint(endpoint) is False
        self._enc = Encoder()
        self._monitor: zmq.Socket | None = None
        self.pub: zmq.Socket = zctx.socket(zmq.XPUB)
        self.replay: zmq.Socket | None = None
        try:
            self.pub.setsockopt(zmq.SNDHWM, hwm)
            self.pub.setsockopt(zmq.XPUB_NODROP, 1)
            self.pub.setsockopt(zmq.LINGER, int(CLOSE_TIMEOUT_S * 1000))
            if self.connects:
                self._monitor = self.pub.get_monitor_socket(
                    zmq.EVENT_CONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED)
                _open(self.pub, endpoint, "kv_events_endpoint", bind=False)
            else:
                _open(self.pub, endpoint, "kv_events_endpoint", bind=True)
            if replay_endpoint is not None:
                self.replay = zctx.socket(zmq.ROUTER)
                self.replay.setsockopt(zmq.SNDHWM, 2 * (buffer_steps + 1))
                self.replay.setsockopt(zmq.LINGER, int(CLOSE_TIMEOUT_S * 1000))
                _open(self.replay, replay_endpoint, "kv_events_replay_endpoint", bind=True)
        except BaseException:
            self._close_sockets(linger=0)
            raise

    # -- the sink ------------------------------------------------------------------------------
    def publish(self, ts_s: float, events: list) -> None:
        """Send one batch (a step's events) and keep it for the replay socket."""
        if not self.waited:
            self.wait_for_subscriber()
        payload = self._enc.encode(ts_s, events, self.rank)
        seq = self.seq
        self.seq += 1
        seq_bytes = seq.to_bytes(8, "big")
        try:
            self.pub.send_multipart((self.topic, seq_bytes, payload), flags=zmq.NOBLOCK)
        except zmq.Again:
            self.dropped += 1
        self.buffer.append((seq, payload))
        self.service(0)

    def wait_for_subscriber(self, deadline: float | None = None) -> None:
        """Wait up to `wait_s` (or until the monotonic `deadline`, shared by a cluster's
        publishers) for a first subscription; warn if none came."""
        self.waited = True
        if self.wait_s <= 0:
            return
        deadline = time.monotonic() + self.wait_s if deadline is None else deadline
        connected = False
        while self.subscriptions <= 0:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            poller = zmq.Poller()
            poller.register(self.pub, zmq.POLLIN)
            if self._monitor is not None:
                poller.register(self._monitor, zmq.POLLIN)
            if self.replay is not None:
                poller.register(self.replay, zmq.POLLIN)
            ready = dict(poller.poll(int(min(left, 0.1) * 1000)))
            if self._monitor is not None and self._monitor in ready:
                self._monitor.recv_multipart()
                connected = True
            self.service(0)
        if self.subscriptions <= 0:
            if self.connects and not connected:
                why = f"nothing accepted the connection to {self.endpoint}"
            elif self.connects:
                why = f"connected to {self.endpoint}, but no subscription came"
            else:
                why = f"no subscriber connected to {self.endpoint}"
            self.warn(f"kv events: {why} in {self.wait_s:g} s; publishing anyway (what is "
                      "sent before a subscriber joins is lost to it, but the replay socket "
                      "keeps the last batches)" if self.replay is not None else
                      f"kv events: {why} in {self.wait_s:g} s; publishing anyway (what is "
                      "sent before a subscriber joins is lost to it)")

    def service(self, timeout_s: float) -> None:
        """Read subscription messages and answer replay requests, waiting up to `timeout_s`
        for the first one."""
        poller = zmq.Poller()
        poller.register(self.pub, zmq.POLLIN)
        if self.replay is not None:
            poller.register(self.replay, zmq.POLLIN)
        ready = dict(poller.poll(int(max(timeout_s, 0.0) * 1000)))
        while self.pub in ready:
            try:
                msg = self.pub.recv(zmq.NOBLOCK)
            except zmq.Again:
                break
            prefix = msg[1:]
            if not self.topic.startswith(prefix):
                # it hears nothing (llm-d's `kv@POD@MODEL` topic against a replay's ''):
                # not a subscriber to wait for, and said once
                if msg[:1] == b"\x01" and prefix not in self.foreign:
                    self.foreign.add(prefix)
                    self.warn(f"kv events: a subscriber subscribed to topic "
                              f"{prefix.decode('utf-8', 'replace')!r}, which this "
                              f"publisher's topic {self.topic.decode('utf-8', 'replace')!r} "
                              "does not start with: it receives nothing (kv_events_topic)")
            elif msg[:1] == b"\x01":
                self.subscriptions += 1
            elif msg[:1] == b"\x00":
                self.subscriptions -= 1
        if self.replay is not None and self.replay in ready:
            while True:
                try:
                    frames = self.replay.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                self._answer(frames)

    def _answer(self, frames: list[bytes]) -> None:
        """One replay request: the buffered batches from its sequence number, then the end."""
        assert self.replay is not None
        if len(frames) != 3:
            self.warn(f"kv events: a replay request of {len(frames)} frames, not 3: ignored")
            return
        client, _, start = frames
        first = int.from_bytes(start, "big")
        self.replays += 1
        try:
            for seq, payload in self.buffer:
                if seq >= first:
                    self.replay.send_multipart((client, b"", self.topic, seq.to_bytes(8, "big"),
                                                payload), flags=zmq.NOBLOCK)
            self.replay.send_multipart((client, b"", b"", END_SEQ, b""), flags=zmq.NOBLOCK)
        except zmq.Again:
            self.warn("kv events: a replay answer did not fit the replay socket's queue "
                      "(the requester is not reading): cut short")

    def close(self) -> None:
        self._close_sockets(linger=int(CLOSE_TIMEOUT_S * 1000))

    def _close_sockets(self, linger: int) -> None:
        if self._monitor is not None:
            try:
                self.pub.disable_monitor()
            except zmq.ZMQError:
                pass
            self._monitor.close(linger=0)
            self._monitor = None
        for sock in (self.pub, self.replay):
            if sock is not None and not sock.closed:
                sock.close(linger=linger)

    def stats(self) -> dict:
        return {"endpoint": self.endpoint, "replay_endpoint": self.replay_endpoint,
                "batches": self.seq, "dropped": self.dropped, "replay_requests": self.replays}


def _open(sock: zmq.Socket, endpoint: str, field: str, *, bind: bool,
          in_use: str = "another vLLM or kvcli publishing there?") -> None:
    """Bind or connect, a ZMQ error as one line naming the option; `in_use` is the likely
    holder of an address already in use (a listener's differs from a publisher's)."""
    try:
        if bind:
            sock.bind(endpoint)
        else:
            sock.connect(endpoint)
    except zmq.ZMQError as err:
        if err.errno == zmq.EADDRINUSE:
            raise InputError(f"{endpoint}: address already in use ({in_use})",
                             field=field) from None
        what = "bind" if bind else "connect to"
        why = ""
        if bind and is_ipv6(endpoint) and not sock.getsockopt(zmq.IPV6):
            # (vLLM 0.33's publisher sets no IPv6 option for an endpoint it is given: it fails
            # on this endpoint the same way, and kvcli's mirrors it)
            why = " (vLLM's publisher fails here too: it binds without IPv6; use tcp://*:PORT)"
        raise InputError(f"{endpoint}: cannot {what} it: {err.strerror}{why}",
                         field=field) from None
