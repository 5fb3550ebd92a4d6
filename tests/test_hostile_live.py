"""Live options (docs/live.md) that never ended or broke: a metrics interval of 1e-300 s wrote
snapshots forever (the snapshot clock's sum stopped moving; 3.6 GB in 10 minutes, deaf to
SIGTERM at the end of the run); two requests 10^12 ms apart wrote a snapshot every 10 s of the
idle gap (10^8, ~360 GB). Each is now one line, exit code 2, before the replay."""

from __future__ import annotations

import json

import pytest
from test_hostile_options import refused, runner

from kvcli.app import app

REQ = {"prompt_token_ids": [1, 2, 3, 4, 5], "output_length": 3}


def _far(tmp_path, gap_ms: float):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(dict(REQ, timestamp=0)) + "\n"
                    + json.dumps(dict(REQ, timestamp=gap_ms)) + "\n")
    return path


@pytest.mark.parametrize("value", ["1e-300", "0.0009"])
def test_a_metrics_interval_below_a_simulated_ms(tmp_path, value):
    out = tmp_path / "m.prom"
    refused(["replay", str(_far(tmp_path, 10)), "--metrics", str(out), "--metrics-interval-s",
             value], "error: option --metrics-interval-s: must be at least 0.001 s of simulated "
            f"time, got {float(value)!r}")
    assert not out.exists()


@pytest.mark.parametrize("command", ["replay", "cluster"])
def test_snapshots_up_to_the_last_arrival_are_bounded(tmp_path, command):
    out = tmp_path / "m.prom"
    limit = ("100,000 (~30 KB each)" if command == "replay" else
             "50,000 (~60 KB each, 2 engines)")      # (a snapshot is ~30 KB an engine)
    refused([command, str(_far(tmp_path, 1e12)), "--metrics", str(out)],
            "error: option --metrics-interval-s: 100,000,000 snapshots up to the trace's last "
            f"arrival (1,000,000,000 s of simulated time) is more than the limit of {limit}: "
            "raise it")
    assert not out.exists()
    # the same trace with a longer interval, or not replayed by its timestamps, is fine
    for extra in (["--metrics-interval-s", "1e6"], ["--arrivals", "ignore"]):
        res = runner.invoke(app, [command, str(_far(tmp_path, 1e12)), "--metrics", str(out),
                                  *extra, "--json"])
        assert res.exit_code == 0, res.output
        assert out.read_bytes().count(b"# kvcli snapshot") <= 1001


def test_a_large_metrics_file_is_said_before_the_replay():
    # (0.001 s over the sample wrote 2.2 GB within the limit with no word)
    import io

    from prometheus_client import CollectorRegistry

    from kvcore.live.snapshots import Snapshots

    snaps = Snapshots(io.BytesIO(), CollectorRegistry(), 1000.0)
    assert snaps.check_span(3_333_999.0) is None                  # 3,333 x 30 KB < 100 MB
    assert snaps.check_span(3_334_000.0) == (
        "metrics: at least 3,334 snapshots (up to the trace's last arrival), about 100 MB at "
        "--metrics-interval-s 1 (a longer interval writes fewer)")
    assert snaps.check_span(0.0, 2, floor_ms=2_000_000.0) == (
        "metrics: at least 2,000 snapshots (up to the end of a request's decode, at the "
        "earliest), about 120 MB at --metrics-interval-s 1 (a longer interval writes fewer)")


@pytest.mark.parametrize("command", ["replay", "cluster"])
def test_the_size_is_said_once_a_file(tmp_path, monkeypatch, command):
    from kvcore.live import snapshots

    monkeypatch.setattr(snapshots, "SAY_BYTES", 1)
    out = tmp_path / "m.prom"
    res = runner.invoke(app, [command, str(_far(tmp_path, 3000)), "--metrics", str(out),
                              "--metrics-interval-s", "1", "--json"])
    assert res.exit_code == 0, res.output
    said = [ln for ln in res.stderr.splitlines() if "metrics: at least" in ln]
    assert said == [("warning: metrics: at least 3 snapshots (up to the trace's last "
                     "arrival), about 0 MB at --metrics-interval-s 1 (a longer interval writes "
                     "fewer)")]


# -- kvcli events listen --idle-timeout-s 1e300 (or anything past 2^31 - 1 ms, ZMQ's C int)
# -- raised OverflowError with a traceback at the first wait

@pytest.mark.parametrize("value", ["1e300", "2147484"])
def test_an_idle_timeout_past_zmq_poll(value):
    refused(["events", "listen", "tcp://127.0.0.1:5611", "--idle-timeout-s", value, "--count",
             "1"], "error: option --idle-timeout-s: must be at most 2,147,483 s (about 24 days; "
            f"0 waits forever), got {float(value)!r}")


def test_messages_framed_otherwise_are_counted_not_silence():
    # (a publisher of 2-frame messages looked like no publisher: "0 batch(es)", exit 0)
    import threading

    import zmq
    from live_helpers import free_port

    port = free_port()
    zctx = zmq.Context()
    pub = zctx.socket(zmq.XPUB)
    pub.setsockopt(zmq.LINGER, 0)
    pub.bind(f"tcp://127.0.0.1:{port}")

    def serve() -> None:
        pub.recv()                                      # the listener's subscription
        for _ in range(5):
            pub.send_multipart((b"", b"123"))
        for seq in range(2):        # three frames, a payload that does not decode: printed
            pub.send_multipart((b"", seq.to_bytes(8, "big"), b"\x01"))

    t = threading.Thread(target=serve)
    t.start()
    try:
        r = runner.invoke(app, ["events", "listen", f"tcp://127.0.0.1:{port}", "--lines",
                                "--idle-timeout-s", "0.5"])
    finally:
        t.join(10)
        pub.close()
        zctx.term()
    assert r.exit_code == 0 and [json.loads(x)["seq"] for x in r.stdout.splitlines()] == [0, 1]
    said = ("warning: 5 message(s) were not a KV event batch's three frames (topic, 8-byte "
            "sequence number, payload): skipped; is the endpoint a vLLM KV event publisher?")
    assert r.stderr.splitlines() == ["2 batch(es), 0 from the replay socket", said]


@pytest.mark.parametrize("args, field", [
    (["events", "listen", "tcp://256.1.1.1:5557"], "argument ENDPOINT"),
    (["events", "listen", "tcp://127.0.0.1:5557", "--replay-endpoint",
      "tcp://10.0.0.300:5558"], "option --replay-endpoint"),
    (["replay", "traces/shared-prefix.jsonl", "--kv-events-endpoint",
      "tcp://lo;1.2.3.256:5557"], "option --kv-events-endpoint")])
def test_a_dotted_host_that_is_no_ipv4_address_is_refused(args, field):
    # (ZMQ took it for a name and retried it for ever: the listener ended as silence, exit 0)
    host = args[-1][len("tcp://"):].rpartition(":")[0].rpartition(";")[2]
    refused([*args, "--idle-timeout-s" if args[0] == "events" else "--num-blocks",
             "0.2" if args[0] == "events" else "96"],
            f"error: {field}: '{args[-1]}': {host} is no IPv4 address (each number is 0 to 255)")


def test_a_name_that_does_not_resolve_yet_is_said_not_refused(monkeypatch):
    """A service not yet up resolves later, and ZMQ looks the name up at each retry: refused,
    a listener started before it never connected. The listener says so and waits."""
    import socket

    def no_such_name(host, *args, **kw):
        if host == "later.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kw)

    real = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", no_such_name)    # (no resolver needed)
    r = runner.invoke(app, ["events", "listen", "tcp://later.invalid:5557", "--idle-timeout-s",
                            "0.2", "--lines"])
    assert (r.exit_code, r.stdout) == (0, "")
    said = ("warning: tcp://later.invalid:5557: host 'later.invalid' does not resolve (Name or "
            "service not known); ZMQ keeps trying, and nothing arrives until it does")
    assert r.stderr.splitlines() == [said, "0 batch(es), 0 from the replay socket"]


def test_snapshots_through_the_longest_decode_are_bounded(tmp_path):
    # (one request of 100,000 output tokens at 1 ms wrote 1.2 GB a minute: the bound counted up
    # to the last arrival only, 0 s here)
    long = tmp_path / "long.jsonl"
    long.write_text('{"timestamp": 0, "prompt_token_ids": [1, 2, 3, 4, 5, 6, 7, 8, 9], '
                    '"output_length": 100000}\n')
    out = tmp_path / "m.prom"
    refused(["replay", str(long), "--metrics", str(out), "--metrics-interval-s", "0.001"],
            "error: option --metrics-interval-s: 524,994 snapshots up to the end of a request's "
            "decode, at the earliest (525 s of simulated time) is more than the limit "
            "of 100,000 (~30 KB each): raise it")
    assert not out.exists()
    # the floor is one: 2,000 tokens at 5.25 ms a step take at least 10.49 s
    long.write_text('{"timestamp": 0, "prompt_token_ids": [1, 2, 3], "output_length": 2000}\n')
    res = runner.invoke(app, ["replay", str(long), "--metrics", str(out),
                              "--metrics-interval-s", "0.01", "--json"])
    assert res.exit_code == 0, res.output
    assert out.read_bytes().count(b"# kvcli snapshot") >= 1049


@pytest.mark.parametrize("lines, extra, refuses", [
    # the longest output beside a longer prompt elsewhere (the two maxima of two requests
    # turned the floor off: 150 MB in 8 s)
    (['{"timestamp": 0, "input_length": 10, "output_length": 100000}',
      '{"timestamp": 0, "input_length": 99000, "output_length": 1}'], [], True),
    # a request stops at max_model_len: 900 tokens, not 30,000 (refused, the run is 4.7 s)
    (['{"timestamp": 0, "input_length": 100, "output_length": 30000}'],
     ["--max-model-len", "1000"], False),
    # a request --skip-bad rejects decodes nothing
    (['{"timestamp": 0, "input_length": 2000, "output_length": 30000}',
      '{"timestamp": 0, "input_length": 100, "output_length": 50}'],
     ["--max-model-len", "1000", "--skip-bad"], False),
])
def test_the_decode_floor_is_each_requests_own(tmp_path, lines, extra, refuses):
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(x + "\n" for x in lines))
    out = tmp_path / "m.prom"
    res = runner.invoke(app, ["replay", str(trace), "--metrics", str(out),
                              "--metrics-interval-s", "0.001", *extra, "--json"])
    if refuses:
        assert res.exit_code == 2 and "up to the end of a request's decode" in res.stderr
        assert not out.exists()
    else:
        assert res.exit_code == 0, res.output
