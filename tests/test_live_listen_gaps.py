"""`listen`'s sequence rules against a scripted publisher (an XPUB that sends once the listener
has subscribed, and a ROUTER answering replay requests from a buffer the test sets): a gap
filled within `count`, a buffer that lost the oldest missing batches, a replay socket that never
answers, a publisher that starts again from 0."""

from __future__ import annotations

import threading

import msgspec
import zmq
from live_helpers import free_port

from kvcore.live import subscriber
from kvcore.live.subscriber import listen
from kvcore.live.wire import END_SEQ, KVEventBatch


def payload(seq: int, run: int = 1) -> bytes:
    """Batch `seq` of publisher run `run` (a restarted one's batch 0 is not the first's)."""
    return msgspec.msgpack.encode(KVEventBatch(ts=float(seq + 1000 * (run - 1)), events=[]))


def run(live: list[int], buffered: list[int] | None, **kw) -> tuple[list, dict]:
    """Publish `live` (in order) once the listener subscribed; the ROUTER (None: none bound)
    answers a request from START with the `buffered` numbers >= START and the end marker."""
    port, rport = free_port(), free_port()
    zctx = zmq.Context()
    pub = zctx.socket(zmq.XPUB)
    pub.setsockopt(zmq.LINGER, 0)
    pub.bind(f"tcp://127.0.0.1:{port}")
    router = None
    if buffered is not None:
        router = zctx.socket(zmq.ROUTER)
        router.setsockopt(zmq.LINGER, 0)
        router.bind(f"tcp://127.0.0.1:{rport}")
    stop = threading.Event()

    def serve() -> None:
        pub.recv()                          # the listener's subscription
        for seq in live:
            pub.send_multipart((b"", seq.to_bytes(8, "big"), payload(seq)))
        while router is not None and not stop.is_set():
            if router.poll(50):
                ident, _, start = router.recv_multipart()
                first = int.from_bytes(start, "big")
                for seq in (s for s in buffered or () if s >= first):
                    router.send_multipart((ident, b"", b"", seq.to_bytes(8, "big"),
                                           payload(seq)))
                router.send_multipart((ident, b"", b"", END_SEQ, b""))

    t = threading.Thread(target=serve)
    t.start()
    stats: dict = {}
    try:
        got = list(listen(f"tcp://127.0.0.1:{port}", replay_endpoint=f"tcp://127.0.0.1:{rport}",
                          idle_timeout_s=0.5, stats=stats, **kw))
    finally:
        stop.set()
        t.join(10)
        pub.close()
        if router is not None:
            router.close()
        zctx.term()
    return [x.get("seq", x) if "seq" in x else x for x in got], stats


def test_a_gap_filled_from_the_replay_socket_stops_at_count():
    got, stats = run([5, 6], buffered=[0, 1, 2, 3, 4], count=3)
    assert got == [0, 1, 2] and stats["batches"] == 3        # (it printed 195 of --count 3)


def test_a_buffer_that_lost_the_oldest_gives_the_gap_then_what_it_still_holds():
    got, stats = run([5, 6], buffered=[2, 3, 4])
    assert got == [{"gap": [0, 1]}, 2, 3, 4, 5, 6]           # (it printed gap [0, 4], then 5)
    assert (stats["replayed"], stats["gaps"], stats["missing"]) == (3, 1, 2)


def test_a_replay_socket_that_never_answers_is_a_gap_not_an_error(monkeypatch):
    monkeypatch.setattr(subscriber, "REPLAY_TIMEOUT_S", 0.3)
    got, stats = run([0, 1, 3, 4, 5], buffered=None)
    assert got == [0, 1, {"gap": [2, 2]}, 3, 4, 5]           # (it stopped at 1 with exit 2)
    assert stats["unanswered"] == 1


def test_a_publisher_that_starts_again_from_0_is_said_and_read():
    got, stats = run([0, 1, 2, 0, 1], buffered=[])
    assert got == [0, 1, 2, {"restart": [2, 0]}, 0, 1] and stats["restarts"] == 1


def test_the_new_publishers_first_batches_missed_are_a_gap():
    # (the new run's 0 and 1 were missed: it went on from 2, the loss said nowhere)
    got, stats = run([0, 1, 2, 3, 2, 3], buffered=[])
    assert got == [0, 1, 2, 3, {"restart": [3, 2]}, {"gap": [0, 1]}, 2, 3]
    assert (stats["restarts"], stats["gaps"], stats["missing"]) == (1, 1, 2)
    got, stats = run([0, 1, 2, 3, 2, 3], buffered=[0, 1])      # its replay socket has them
    assert got == [0, 1, 2, 3, {"restart": [3, 2]}, 0, 1, 2, 3] and stats["gaps"] == 0


def test_numbers_below_first_seq_are_skipped_not_a_restart():
    # (--first-seq 5 heard live 3 first: it was said as a restart [4, 3], then 3 and 4 printed)
    got, stats = run([3, 4, 5, 6], buffered=[], first_seq=5)
    assert got == [5, 6] and (stats["restarts"], stats["skipped"]) == (0, 2)
    got, stats = run([5, 6, 0, 1], buffered=[], first_seq=5)   # a new run after 5, 6 is one
    assert got == [5, 6, {"restart": [6, 0]}, 0, 1] and stats["restarts"] == 1


def run_late(first: list[int], second: list[int]) -> tuple[list, dict]:
    """A listener that joined after a run ended: its batches `first` only from the replay
    socket (answered once the quiet listener asks); then `second` published live (``(seq,
    run)``: run 1's bytes are the first run's batch again, run 2's a new run's), and the
    replay socket holds them from then on."""
    port, rport = free_port(), free_port()
    zctx = zmq.Context()
    pub = zctx.socket(zmq.XPUB)
    pub.setsockopt(zmq.LINGER, 0)
    pub.bind(f"tcp://127.0.0.1:{port}")
    router = zctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.bind(f"tcp://127.0.0.1:{rport}")
    stop = threading.Event()

    def answer(buffer: list[tuple[int, int]]) -> bool:
        if not router.poll(50):
            return False
        ident, _, start = router.recv_multipart()
        for seq, r in (x for x in buffer if x[0] >= int.from_bytes(start, "big")):
            router.send_multipart((ident, b"", b"", seq.to_bytes(8, "big"), payload(seq, r)))
        router.send_multipart((ident, b"", b"", END_SEQ, b""))
        return True

    def serve() -> None:
        pub.recv()                          # the listener's subscription
        while not stop.is_set() and not answer([(x, 1) for x in first]):
            pass
        for seq, r in second:
            pub.send_multipart((b"", seq.to_bytes(8, "big"), payload(seq, r)))
        while not stop.is_set():
            answer([x for x in second if x[1] == 2])

    t = threading.Thread(target=serve)
    t.start()
    stats: dict = {}
    try:
        got = list(listen(f"tcp://127.0.0.1:{port}", replay_endpoint=f"tcp://127.0.0.1:{rport}",
                          idle_timeout_s=0.5, stats=stats))
    finally:
        stop.set()
        t.join(10)
        pub.close()
        router.close()
        zctx.term()
    return [x.get("seq", x) if "seq" in x else x for x in got], stats


def test_a_new_run_after_batches_read_only_from_the_replay_socket_is_a_restart():
    """The listener joined late: the first run's 0..4 came from the replay socket, so no live
    number was read. The next run's live 0, 1 were dropped as "already had" (and a longer one
    would have been printed as if it continued the first)."""
    got, stats = run_late([0, 1, 2, 3, 4], [(0, 2), (1, 2)])
    assert got == [0, 1, 2, 3, 4, {"restart": [4, 0]}, 0, 1] and stats["restarts"] == 1


def test_a_live_copy_of_a_replayed_batch_is_not_a_restart():
    # the same bytes live as the replay socket gave: published while it answered
    got, stats = run_late([0, 1, 2, 3, 4], [(3, 1), (4, 1), (5, 2)])
    assert got == [0, 1, 2, 3, 4, 5] and stats["restarts"] == 0


def test_a_listener_binds_an_ipv6_wildcard_for_a_publisher_that_connects():
    """docs/live.md: `listen tcp://[::]:PORT` binds (a vLLM told `tcp://[::1]:PORT` connects
    to it); without zmq.IPV6 the bind failed with "No such device"."""
    import socket

    import pytest

    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    port = free_port()
    zctx = zmq.Context()
    pub = zctx.socket(zmq.PUB)
    pub.setsockopt(zmq.LINGER, 0)
    pub.setsockopt(zmq.IPV6, 1)
    stop = threading.Event()

    def serve() -> None:
        pub.connect(f"tcp://[::1]:{port}")
        seq = 0
        while not stop.is_set():            # until the listener has two (a PUB that connects
            pub.send_multipart((b"", seq.to_bytes(8, "big"), payload(seq)))   # drops what it
            seq += 1                        # sends before the link is up: a gap first)
            stop.wait(0.05)

    t = threading.Thread(target=serve)
    t.start()
    stats: dict = {}
    try:
        got = list(listen(f"tcp://[::]:{port}", idle_timeout_s=5, count=2, stats=stats,
                          first_seq=0))
    finally:
        stop.set()
        t.join(10)
        pub.close()
        zctx.term()
    seqs = [x["seq"] for x in got if "seq" in x]
    assert len(seqs) == 2 and seqs[1] == seqs[0] + 1 and stats["batches"] == 2
