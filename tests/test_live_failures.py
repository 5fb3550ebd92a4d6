"""kvcli as a stand-in vLLM, when things go wrong: ports in use, bad endpoints, a subscriber
that never connects, a slow one (docs/live.md). Every wait has a deadline."""

from __future__ import annotations

import json
import socket

import zmq
from live_helpers import (
    TRACE,
    free_port,
)
from typer.testing import CliRunner

from kvcli.app import app

runner = CliRunner()


def test_port_in_use_and_bad_endpoints_are_one_line():
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = runner.invoke(app, ["replay", TRACE, "--num-blocks", "96",
                                "--kv-events-endpoint", f"tcp://*:{port}"])
        assert r.exit_code == 2
        assert "option --kv-events-endpoint:" in r.stderr and "in use" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    for args, flag in (
            (["--kv-events-endpoint", "localhost:5557"], "--kv-events-endpoint"),
            (["--kv-events-endpoint", "tcp://*:0"], "--kv-events-endpoint"),
            (["--kv-events-endpoint", "tcp://*:70000"], "--kv-events-endpoint"),
            (["--kv-events-endpoint", "inproc://x"], "--kv-events-endpoint"),
            (["--kv-events-replay-endpoint", "tcp://*:5558"], "--kv-events-replay-endpoint"),
            (["--metrics-port", "9100"], "--metrics-port"),
            (["--realtime", "0"], "--realtime"),
            (["--realtime", "nan"], "--realtime"),
            (["--metrics-interval-s", "-1"], "--metrics-interval-s"),
            (["--kv-events-hwm", "-1"], "--kv-events-hwm"),
            # (C ints in ZMQ: an OverflowError traceback when the socket opened)
            (["--kv-events-endpoint", "tcp://*:5557", "--kv-events-wait-s", "0",
              "--kv-events-hwm", "10000000000"], "--kv-events-hwm"),
            (["--kv-events-endpoint", "tcp://*:5557", "--kv-events-replay-endpoint",
              "tcp://*:5558", "--kv-events-buffer-steps", "2000000000"],
             "--kv-events-buffer-steps")):
        r = runner.invoke(app, ["replay", TRACE, "--num-blocks", "96", *args])
        assert r.exit_code == 2, (args, r.output)
        assert r.stderr.startswith(f"error: option {flag}:"), (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    # (8 unsigned bytes travel, as vLLM packs them: the parser's 2**63 for every integer
    # option refused 2**63 to 2**64 - 1 while --first-seq's own check said 2**64 - 1)
    for bad, shown in ((str(2**64), str(2**64)), ("-1", "-1"), ("x", "'x'"), ("", "''")):
        r = runner.invoke(app, ["events", "listen", "tcp://127.0.0.1:5557", "--first-seq",
                                bad])
        assert r.exit_code == 2 and r.stderr == (
            f"error: option --first-seq: must be an integer from 0 to 2**64 - 1 (a batch's "
            f"number travels as 8 unsigned bytes), got {shown}\n")
    r = runner.invoke(app, ["events", "listen", "http://x"])
    # (ENDPOINT is a positional argument: "option --endpoint" named a flag that does not exist)
    assert r.exit_code == 2 and r.stderr == ("error: argument ENDPOINT: 'http://x': expected "
                                             "tcp://HOST:PORT (tcp://*:PORT binds) or ipc://PATH\n")


def test_first_seq_takes_every_number_vllm_can_send():
    from kvcore.live.subscriber import check_first_seq

    assert check_first_seq(str(2**64 - 1)) == 2**64 - 1 and check_first_seq("0") == 0
    # 2**63 (past the parser's signed 64 bits) reaches the listener, which hears nothing
    port = free_port()
    r = runner.invoke(app, ["events", "listen", f"tcp://127.0.0.1:{port}", "--first-seq",
                            str(2**63), "--idle-timeout-s", "0.2", "--lines"])
    assert r.exit_code == 0, r.output
    assert r.stdout == "" and r.stderr == "0 batch(es), 0 from the replay socket\n"


def test_a_listener_on_a_port_in_use_names_the_likely_holder():
    """vLLM binds its publisher, so a listener that binds the same port is the usual clash: it
    said "another vLLM or kvcli publishing there?" as if the listener published."""
    import zmq

    zctx = zmq.Context()
    pub = zctx.socket(zmq.PUB)
    try:
        port = pub.bind_to_random_port("tcp://*")
        r = runner.invoke(app, ["events", "listen", f"tcp://*:{port}"])
    finally:
        pub.close(linger=0)
        zctx.term()
    assert r.exit_code == 2 and r.stderr == (
        f"error: argument ENDPOINT: tcp://*:{port}: address already in use (a publisher bound "
        "there? connect to it instead, tcp://HOST:PORT; or another listener)\n")


def test_a_subscriber_that_never_connects_is_a_warning():
    port = free_port()
    r = runner.invoke(app, ["replay", TRACE, "--num-blocks", "96", "--kv-events-endpoint",
                            f"tcp://127.0.0.1:{port}", "--kv-events-wait-s", "0.3", "--json"])
    assert r.exit_code == 0, r.output
    assert "nothing accepted the connection" in r.stderr
    doc = json.loads(r.stdout)
    assert doc["live"]["kv_events"][0]["batches"] > 0
    # in the JSON's warnings too (they reached stderr only)
    said = [w for w in doc["warnings"] if "nothing accepted the connection" in w]
    assert len(said) == 1 and f"warning: {said[0]}" in r.stderr


def test_listen_ends_by_itself():
    r = runner.invoke(app, ["events", "listen", f"tcp://127.0.0.1:{free_port()}",
                            "--idle-timeout-s", "0.2"])
    assert r.exit_code == 0 and r.stdout == ""
    assert "0 batch(es)" in r.stderr


def test_a_slow_subscriber_makes_drops_that_are_counted_and_warned():
    """A SUB that never reads and high-water marks of 1 (inproc: no kernel buffers between):
    batches drop, each is counted and kept for the replay socket, and closing warns."""
    from kvcore.kv_events import AllBlocksCleared as A
    from kvcore.live.options import LiveOptions
    from kvcore.live.publisher import ZmqPublisher
    from kvcore.live.session import LiveRun

    zctx = zmq.Context()
    warnings: list[str] = []
    pub = ZmqPublisher(zctx, "inproc://slow", hwm=1, wait_s=5, warn=warnings.append)
    sub = zctx.socket(zmq.SUB)
    sub.setsockopt(zmq.RCVHWM, 1)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect("inproc://slow")
    for i in range(50):
        pub.publish(i / 10, [A()])
    assert pub.subscriptions == 1 and not warnings      # it waited for the subscription
    assert pub.seq == 50 and 0 < pub.dropped < 50 and len(pub.buffer) == 50
    run = LiveRun(LiveOptions(), warn=warnings.append)
    run.publishers = [pub]
    run.close(0.0)
    sub.close(linger=0)
    zctx.term()
    assert len(warnings) == 1 and f"{pub.dropped:,} of 50 batches" in warnings[0]
    assert "kv_events_hwm" in warnings[0]


def test_live_options_that_nothing_would_read_are_refused(tmp_path):
    # each was accepted and silently did nothing: no publisher, no replay socket, no metrics file
    for args, flag, need in (
            (["--kv-events-hwm", "5"], "--kv-events-hwm", "kv_events_endpoint"),
            (["--kv-events-topic", "kv"], "--kv-events-topic", "kv_events_endpoint"),
            (["--kv-events-wait-s", "1"], "--kv-events-wait-s", "kv_events_endpoint"),
            (["--kv-events-endpoint", "tcp://127.0.0.1:1", "--kv-events-buffer-steps", "5"],
             "--kv-events-buffer-steps", "kv_events_replay_endpoint"),
            (["--metrics-interval-s", "5"], "--metrics-interval-s", "metrics FILE")):
        for command in ("replay", "cluster"):
            r = runner.invoke(app, [command, TRACE, "--num-blocks", "96", *args])
            assert r.exit_code == 2, (args, r.output)
            assert r.stderr == f"error: option {flag}: has no effect without {need}\n", r.stderr
    # with what reads it, the same option runs
    out = tmp_path / "m.prom"
    r = runner.invoke(app, ["replay", TRACE, "--num-blocks", "96", "--metrics", str(out),
                            "--metrics-interval-s", "5"])
    assert r.exit_code == 0, r.output
    # cache mode runs no step and no request for vLLM's metrics: zeros beside the cache's counts
    for command in ("replay", "cluster"):
        r = runner.invoke(app, [command, TRACE, "--num-blocks", "96", "--mode", "cache",
                                "--metrics", str(tmp_path / "c.prom")])
        assert r.exit_code == 2 and r.stderr == (
            "error: option --metrics: engine mode only: cache mode runs no scheduler and no "
            "steps for vLLM's metrics to measure\n"), r.output
        assert not (tmp_path / "c.prom").exists()


def test_the_wait_for_a_subscriber_is_not_the_replay_falling_behind_its_pace():
    """`--kv-events-wait-s 1.5` with no subscriber, paced at 1000x: the pace starts after the
    wait (it counted the wait as 1.5 s behind, sent what that stretch held in one burst and
    warned that the machine was too slow)."""
    r = runner.invoke(app, ["replay", TRACE, "--num-blocks", "96", "--kv-events-endpoint",
                            f"tcp://*:{free_port()}", "--kv-events-wait-s", "1.5",
                            "--realtime", "1000", "--json"])
    assert r.exit_code == 0, r.output
    # (counted, the wait is 1.5 s behind; 1.0 leaves a loaded machine its jitter: 0.537 s
    # was seen with two other jobs on this 2-core machine)
    assert json.loads(r.stdout)["live"]["realtime_max_behind_s"] < 1.0
    assert "behind realtime" not in r.stderr


def test_ctrl_c_while_lingering_ends_the_linger_and_keeps_the_summary():
    """The replay has finished; Ctrl-C in `--kv-events-linger-s` used to skip the summary
    (empty stdout, exit 130). It now ends the linger, and `close` returns the live object."""
    from kvcore.live.options import LiveOptions
    from kvcore.live.session import LiveRun

    pub, rep = f"tcp://*:{free_port()}", f"tcp://*:{free_port()}"
    run = LiveRun(LiveOptions(kv_events_endpoint=pub, kv_events_linger_s=30,
                              kv_events_replay_endpoint=rep, kv_events_wait_s=0), warn=print)
    assert len(run.publishers) == 1         # (LiveRun opened it)
    idles: list[float] = []

    def ctrl_c(seconds: float) -> None:
        idles.append(seconds)
        raise KeyboardInterrupt

    run._idle = ctrl_c
    out = run.close(0.0)
    assert len(idles) == 1 and out["kv_events"][0]["endpoint"] == pub


def test_a_subscriber_to_another_topic_is_said_and_not_waited_for():
    """llm-d's listeners subscribe to `kv@POD@MODEL`; a replay publishing under '' sent them
    nothing, and said nothing."""
    from kvcore.kv_events import AllBlocksCleared as A
    from kvcore.live.publisher import ZmqPublisher

    zctx = zmq.Context()
    said: list[str] = []
    pub = ZmqPublisher(zctx, "inproc://topics", topic="kv@pod-0@m", wait_s=0.3,
                       warn=said.append)
    sub = zctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"kv@pod-1")
    sub.connect("inproc://topics")
    pub.publish(0.0, [A()])
    assert pub.subscriptions == 0
    assert said[0] == ("kv events: a subscriber subscribed to topic 'kv@pod-1', which this "
                       "publisher's topic 'kv@pod-0@m' does not start with: it receives "
                       "nothing (kv_events_topic)")
    assert len(said) == 2 and "no subscriber connected" in said[1]
    ok = zctx.socket(zmq.SUB)
    ok.setsockopt(zmq.SUBSCRIBE, b"kv@pod-0")        # a prefix of it: it hears every batch
    ok.connect("inproc://topics")
    pub.service(0.2)
    assert pub.subscriptions == 1 and len(said) == 2
    pub.close()
    sub.close(linger=0)
    ok.close(linger=0)
    zctx.term()


def test_an_ipv6_publisher_endpoint_fails_as_vllms_and_says_why():
    """vLLM 0.33 binds `tcp://[::]:PORT` without ZMQ's IPv6 option: "No such device". kvcli
    fails the same way, and says what vLLM does not (a listener there sets the option)."""
    r = runner.invoke(app, ["replay", TRACE, "--num-blocks", "96",
                            "--kv-events-endpoint", f"tcp://[::]:{free_port()}"])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "cannot bind it: No such device" in r.stderr
    assert r.stderr.endswith(" (vLLM's publisher fails here too: it binds without IPv6; use "
                             "tcp://*:PORT)\n"), r.stderr
