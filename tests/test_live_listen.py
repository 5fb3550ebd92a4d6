"""`kvcli events listen` end to end against a replay publishing as vLLM 0.33 does (docs/live.md):
what it missed before it started, or after the last batch, comes from the replay socket; an
ipc:// publisher is connected to, not taken over. Every subprocess has a deadline. Its sequence
rules against a scripted publisher: tests/test_live_listen_gaps.py."""

from __future__ import annotations

import json
import signal
import time

import zmq
from live_helpers import TRACE, file_batches, free_port, kvcli


def test_listen_fills_the_gap_of_a_late_start(tmp_path):
    """`kvcli events listen` started after the publisher: what it missed comes from the
    replay socket; its lines are the file's, seq from 0."""
    port, rport = free_port(), free_port()
    out = tmp_path / "vllm.jsonl"
    proc = kvcli("replay", TRACE, "--num-blocks", "96", "--events", str(out),
                 "--events-format", "vllm", "--kv-events-endpoint", f"tcp://*:{port}",
                 "--kv-events-replay-endpoint", f"tcp://*:{rport}", "--kv-events-wait-s", "0",
                 "--realtime", "20", "--kv-events-linger-s", "3")
    try:
        listen = kvcli("events", "listen", f"tcp://127.0.0.1:{port}", "--replay-endpoint",
                       f"tcp://127.0.0.1:{rport}", "--idle-timeout-s", "2")
        stdout, stderr = listen.communicate(timeout=60)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert listen.returncode == 0, stderr
    lines = [json.loads(x) for x in stdout.decode().splitlines()]
    want = file_batches(out)
    assert [x["seq"] for x in lines] == list(range(len(want)))
    assert [{k: v for k, v in x.items() if k != "seq"} for x in lines] == \
        [{**b, "data_parallel_rank": 0} for b in want]
    assert b"from the replay socket" in stderr


def test_listen_started_after_the_last_batch_gets_them_all(tmp_path):
    """A listener that joins once the publisher has sent everything (its replay socket still
    up, lingering): it asked the replay socket only on a live batch past a gap, so it got none
    ("0 batch(es)"); now a quiet idle timeout asks it for what it buffered."""
    port, rport = free_port(), free_port()
    out = tmp_path / "vllm.jsonl"
    proc = kvcli("replay", TRACE, "--num-blocks", "96", "--events", str(out),
                 "--events-format", "vllm", "--kv-events-endpoint", f"tcp://*:{port}",
                 "--kv-events-replay-endpoint", f"tcp://*:{rport}", "--kv-events-wait-s", "0",
                 "--kv-events-linger-s", "120")
    sub = zmq.Context.instance().socket(zmq.SUB)
    try:
        # published when a subscriber of our own, having had batches, hears none for 2 s
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(f"tcp://127.0.0.1:{port}")
        heard, deadline = False, time.monotonic() + 40
        while time.monotonic() < deadline:
            if sub.poll(2000):
                sub.recv_multipart()
                heard = True
            elif heard:
                break
        sub.close()
        listen = kvcli("events", "listen", f"tcp://127.0.0.1:{port}", "--replay-endpoint",
                       f"tcp://127.0.0.1:{rport}", "--idle-timeout-s", "1")
        stdout, stderr = listen.communicate(timeout=60)
        # (a linger of 15 s ran out on a loaded machine before the listener asked: "0
        # batch(es)"; a long one is ended by Ctrl-C, which ends only the linger)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)        # (the file is written when the lingering ends)
    finally:
        proc.kill()
    assert listen.returncode == 0, stderr
    lines = [json.loads(x) for x in stdout.decode().splitlines()]
    want = file_batches(out)
    assert len(want) > 5 and [x["seq"] for x in lines] == list(range(len(want)))
    assert [{k: v for k, v in x.items() if k != "seq"} for x in lines] == \
        [{**b, "data_parallel_rank": 0} for b in want]
    assert f"{len(want):,} batch(es), {len(want):,} from the replay socket" in stderr.decode()


def test_listen_connects_to_an_ipc_publisher(tmp_path):
    """vLLM (and a replay) binds an ipc:// publisher: a listener that bound the same path took
    it over, heard nothing ("0 batch(es)") and left the publisher's other subscribers deaf."""
    sock = f"ipc://{tmp_path}/kv.sock"
    out = tmp_path / "vllm.jsonl"
    proc = kvcli("replay", TRACE, "--num-blocks", "96", "--events", str(out),
                 "--events-format", "vllm", "--kv-events-endpoint", sock,
                 "--kv-events-wait-s", "30")
    try:
        # (the listener starts with the replay: on a loaded machine the replay took over 3 s
        # to bind and publish, and a 3 s idle timeout ended the listener first, hearing nothing)
        listen = kvcli("events", "listen", sock, "--idle-timeout-s", "15")
        stdout, stderr = listen.communicate(timeout=60)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert listen.returncode == 0, stderr
    want = file_batches(out)
    assert len(want) > 5 and [json.loads(x)["seq"] for x in stdout.decode().splitlines()] == \
        list(range(len(want)))
    from kvcore.live.endpoints import listener_binds

    assert listener_binds("tcp://*:5557") and listener_binds("tcp://[::]:5557")
    assert not listener_binds("tcp://[::1]:5557") and not listener_binds(sock)
    assert not listener_binds("tcp://127.0.0.1:5557")
