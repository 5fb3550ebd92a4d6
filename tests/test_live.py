"""kvcli as a stand-in vLLM: KV events over ZMQ exactly as vLLM 0.33's ZmqEventPublisher
(docs/live.md): the wire, the endpoints, what subscribers receive. Every socket here has a
timeout; every subprocess a deadline. Failures: tests/test_live_failures.py; `kvcli events
listen` against a replay: tests/test_live_listen.py."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
import zmq
from live_helpers import (
    DATA,
    DECODER,
    TRACE,
    as_dict,
    file_batches,
    free_port,
    kvcli,
)
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.live.endpoints import is_bind_endpoint, offset_endpoint_port
from kvcore.live.wire import Encoder, batch_to_dict

runner = CliRunner()


# -- the wire ------------------------------------------------------------------------------------
def test_encoding_is_vllms_bytes():
    """Batches encoded by vLLM 0.33's own structs (recorded in the oracle environment, rank 0
    as its publisher fills it in) are our encoder's bytes, and decode to the file's lines."""
    lines = (DATA / "vllm_batches.jsonl").read_text().splitlines()
    payloads = [bytes.fromhex(h) for h in (DATA / "vllm_payloads.msgpack.hex").read_text().split()]
    assert len(lines) == len(payloads) == 10
    kinds = set()
    from kvcore.kv_events import AllBlocksCleared as A
    from kvcore.kv_events import BlockRemoved as R
    from kvcore.kv_events import BlockStored as S

    enc = Encoder()
    for line, payload in zip(lines, payloads, strict=True):
        d = json.loads(line)
        events = []
        for e in d["events"]:
            e = dict(e)
            kind = e.pop("type")
            kinds.add(kind)
            if e.get("extra_keys") is not None:
                e["extra_keys"] = [None if k is None else tuple(k) for k in e["extra_keys"]]
            events.append({"BlockStored": S, "BlockRemoved": R, "AllBlocksCleared": A}[kind](**e))
        assert enc.encode(d["ts"], events, 0) == payload
        assert as_dict(DECODER.decode(payload)) == {**d, "data_parallel_rank": 0}
        assert batch_to_dict(DECODER.decode(payload)) == {**d, "data_parallel_rank": 0}
    assert kinds == {"BlockStored", "BlockRemoved"}


def test_endpoint_rules_are_vllms():
    assert is_bind_endpoint("tcp://*:5557") and is_bind_endpoint("ipc:///tmp/x")
    assert is_bind_endpoint("tcp://[::]:5557") and is_bind_endpoint("inproc://x")
    assert not is_bind_endpoint("tcp://127.0.0.1:5557")
    assert offset_endpoint_port("tcp://*:5557", 0) == "tcp://*:5557"
    assert offset_endpoint_port("tcp://*:5557", 3) == "tcp://*:5560"
    assert offset_endpoint_port("tcp://10.0.0.1:0", 2) == "tcp://10.0.0.1:0"
    assert offset_endpoint_port("inproc://cache", 1) == "inproc://cache_dp1"
    assert offset_endpoint_port(None, 1) is None
    with pytest.raises(ValueError):
        offset_endpoint_port("ipc:///tmp/x", 1)


# -- end to end ----------------------------------------------------------------------------------
def test_published_batches_equal_the_vllm_file(tmp_path):
    """kvcli connects to a bound SUB (it waits for the subscription: no slow-joiner loss);
    the batches decoded with vLLM's structs are the --events-format vllm file's, batch for
    batch (the wire carries rank 0, as vLLM's publisher fills it in), sequence from 0."""
    port = free_port()
    zctx = zmq.Context()
    sub = zctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"kv")
    sub.setsockopt(zmq.LINGER, 0)
    sub.bind(f"tcp://127.0.0.1:{port}")
    out = tmp_path / "vllm.jsonl"
    proc = kvcli("replay", TRACE, "--num-blocks", "96", "--events", str(out),
                 "--events-format", "vllm", "--kv-events-endpoint", f"tcp://127.0.0.1:{port}",
                 "--kv-events-topic", "kv", "--json")
    got = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if sub.poll(300):
                got.append(sub.recv_multipart())
            elif proc.poll() is not None:
                break
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
        sub.close()
        zctx.term()
    assert proc.returncode == 0, stderr
    want = file_batches(out)
    assert len(want) > 20 and any(e["type"] == "BlockRemoved" for b in want for e in b["events"])
    assert [int.from_bytes(seq, "big") for _, seq, _ in got] == list(range(len(want)))
    assert all(topic == b"kv" and len(seq) == 8 for topic, seq, _ in got)
    assert [as_dict(DECODER.decode(p)) for _, _, p in got] == \
        [{**b, "data_parallel_rank": 0} for b in want]
    live = json.loads(stdout)["live"]["kv_events"][0]
    assert live["batches"] == len(want) and live["dropped"] == 0


def test_late_subscriber_recovers_missed_batches(tmp_path):
    """A subscriber that joins mid-replay asks the replay socket for what it missed, from 0:
    every buffered batch, then vLLM's end marker."""
    port, rport = free_port(), free_port()
    out = tmp_path / "vllm.jsonl"
    proc = kvcli("replay", TRACE, "--num-blocks", "96", "--events", str(out),
                 "--events-format", "vllm", "--kv-events-endpoint", f"tcp://*:{port}",
                 "--kv-events-replay-endpoint", f"tcp://*:{rport}", "--kv-events-wait-s", "0",
                 "--realtime", "20", "--kv-events-linger-s", "5")
    zctx = zmq.Context()
    sub = zctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.setsockopt(zmq.LINGER, 0)
    dealer = zctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    try:
        time.sleep(2.0)     # late: the replay (4 s at this pace) has published a part by now
        sub.connect(f"tcp://127.0.0.1:{port}")
        assert sub.poll(30_000), proc.stderr.read() if proc.poll() is not None else "no batch"
        live = [sub.recv_multipart()]
        first = int.from_bytes(live[0][1], "big")
        while sub.poll(3000):
            live.append(sub.recv_multipart())
        dealer.connect(f"tcp://127.0.0.1:{rport}")
        dealer.send_multipart((b"", (0).to_bytes(8, "big")))
        replayed = []
        while dealer.poll(5000):
            frames = dealer.recv_multipart()
            assert frames[0] == b""
            if frames[2] == (-1).to_bytes(8, "big", signed=True):
                assert frames[1] == b"" and frames[3] == b""     # vLLM's end marker
                break
            replayed.append(frames[1:])
        else:
            raise AssertionError("no end marker")
        proc.communicate(timeout=60)
    finally:
        proc.kill()
        sub.close()
        dealer.close()
        zctx.term()
    assert proc.returncode == 0
    want = file_batches(out)
    assert first > 0, "the subscriber was not late: slow the replay down"
    assert [int.from_bytes(s, "big") for _, s, _ in replayed] == list(range(len(want)))
    assert [as_dict(DECODER.decode(p)) for _, _, p in replayed] == \
        [{**b, "data_parallel_rank": 0} for b in want]
    assert [p for _, _, p in live] == [p for _, _, p in replayed[first:first + len(live)]]


def test_cluster_replicas_publish_on_offset_ports():
    """Replica K publishes on PORT+K with data_parallel_rank K (vLLM's DP ranks)."""
    port = free_port()
    while True:
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            break
        except OSError:
            port = free_port()
    zctx = zmq.Context()
    subs = []
    for k in range(2):
        sub = zctx.socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.setsockopt(zmq.LINGER, 0)
        sub.bind(f"tcp://127.0.0.1:{port + k}")
        subs.append(sub)
    got: list[list[int]] = [[], []]
    done = threading.Event()

    def read(k: int) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if subs[k].poll(300):
                _, _seq, payload = subs[k].recv_multipart()
                got[k].append(DECODER.decode(payload).data_parallel_rank)
            elif done.is_set():
                break

    threads = [threading.Thread(target=read, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    r = runner.invoke(app, ["cluster", TRACE, "--num-blocks", "96", "--replicas", "2",
                            "--kv-events-endpoint", f"tcp://127.0.0.1:{port}", "--json"])
    done.set()
    for t in threads:
        t.join(30)
    for s in subs:
        s.close()
    zctx.term()
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)["routers"][0]["live"]["kv_events"]
    assert [p["endpoint"] for p in res] == [f"tcp://127.0.0.1:{port + k}" for k in range(2)]
    assert got[0] and set(got[0]) == {0} and got[1] and set(got[1]) == {1}
    assert [len(g) for g in got] == [p["batches"] for p in res]
