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
    r = runner.invoke(app, ["events", "listen", "tcp://127.0.0.1:5557", "--first-seq",
                            str(2**64)])
    # (refused as it is parsed: every integer option stops below 2**63)
    assert r.exit_code == 2 and "64-bit integer" in r.stderr
    r = runner.invoke(app, ["events", "listen", "http://x"])
    # (ENDPOINT is a positional argument: "option --endpoint" named a flag that does not exist)
    assert r.exit_code == 2 and r.stderr == ("error: argument ENDPOINT: 'http://x': expected "
                                             "tcp://HOST:PORT (tcp://*:PORT binds) or ipc://PATH\n")


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
    assert json.loads(r.stdout)["live"]["realtime_max_behind_s"] < 0.5
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


def test_an_interrupted_replay_does_not_linger(tmp_path):
    """Ctrl-C (or SIGTERM) mid-replay waited out the whole --kv-events-linger-s (up to a day)
    before the outputs were written, without a word."""
    import signal
    import subprocess
    import sys
    import time

    from live_helpers import ROOT

    args = [sys.executable, "-m", "kvcli", "replay", TRACE, "--num-blocks", "96",
            "--kv-events-endpoint", f"tcp://*:{free_port()}", "--kv-events-replay-endpoint",
            f"tcp://*:{free_port()}", "--kv-events-wait-s", "0", "--kv-events-linger-s", "60",
            "--realtime", "0.05", "--metrics", str(tmp_path / "m.prom"), "--json"]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(4)
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - start < 20, err       # not the linger's 60 s
    assert proc.returncode == 130, err
    assert b"stays up" not in err and json.loads(out)["interrupted"] is True
    # the metrics file says so, as the event files do (its snapshots parse all the same)
    last = (tmp_path / "m.prom").read_text().splitlines()[-1]
    assert last.startswith("# kvcli interrupted sim_time_s=")


def test_a_finished_replay_says_it_lingers_and_a_close_cut_short_keeps_the_summary():
    from kvcore.live.options import LiveOptions
    from kvcore.live.session import LiveRun

    said: list[str] = []
    pub = f"tcp://*:{free_port()}"
    run = LiveRun(LiveOptions(kv_events_endpoint=pub, kv_events_linger_s=0.2,
                              kv_events_replay_endpoint=f"tcp://*:{free_port()}",
                              kv_events_wait_s=0), warn=said.append, say=said.append)
    out = run.close(0.0)
    assert said == [("kv events: the replay socket stays up 0.2 s for late subscribers "
                    "(kv_events_linger_s; Ctrl-C ends it)")] and out["kv_events"][0]["batches"] == 0

    class Term:
        def term(self) -> None:     # Ctrl-C while the queued batches leave
            raise KeyboardInterrupt

    said.clear()
    run = LiveRun(LiveOptions(kv_events_endpoint=f"tcp://*:{free_port()}", kv_events_wait_s=0),
                  warn=said.append)
    real, run.zctx = run.zctx, Term()
    out = run.close(0.0)
    assert said == run.said == [("kv events: interrupted while the last queued batches were "
                                "leaving: a subscriber may have missed them")]
    assert out["kv_events"][0]["endpoint"].startswith("tcp://*:")
    real.term()


def test_batches_still_queued_at_close_are_said_lost():
    """A subscriber that does not read: ZMQ discards what is still queued after the close's
    5 s, which no `dropped` count sees (1,100 of 2,806 batches lost with "dropped 0")."""
    from kvcore.kv_events import BlockStored
    from kvcore.live.options import LiveOptions
    from kvcore.live.session import LiveRun

    port = free_port()
    said: list[str] = []
    run = LiveRun(LiveOptions(kv_events_endpoint=f"tcp://*:{port}", kv_events_wait_s=5),
                  warn=said.append)
    zctx = zmq.Context()
    sub = zctx.socket(zmq.SUB)
    sub.setsockopt(zmq.RCVHWM, 1)
    sub.setsockopt(zmq.RCVBUF, 4096)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(f"tcp://127.0.0.1:{port}")
    big = [BlockStored(block_hashes=list(range(16)), parent_block_hash=None,
                       token_ids=list(range(4096)), block_size=16, lora_id=None, medium="GPU",
                       lora_name=None)]
    for i in range(300):                    # ~5 MB a hundred: past the kernel's buffers
        run.publishers[0].publish(i / 100, big)
    out = run.close(1.0)
    sub.close(linger=0)
    zctx.term()
    assert out["kv_events"][0]["dropped"] == 0
    assert said == run.said == [("kv events: the last batches were still queued after 5 s (a "
                                "subscriber not reading?) and were discarded: it missed them "
                                "(not counted in dropped)")]


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


def test_a_clusters_publishers_wait_for_subscribers_to_one_deadline(monkeypatch):
    """Each replica waited up to --kv-events-wait-s in turn (8 replicas: 40 s by default)."""
    from kvcore.kv_events import AllBlocksCleared as A
    from kvcore.live.options import LiveOptions
    from kvcore.live.publisher import ZmqPublisher
    from kvcore.live.session import LiveRun

    deadlines: list[tuple[int, float | None]] = []

    def wait(self, deadline=None):
        self.waited = True
        deadlines.append((self.rank, deadline))

    monkeypatch.setattr(ZmqPublisher, "wait_for_subscriber", wait)
    run = LiveRun(LiveOptions(kv_events_endpoint=f"tcp://*:{free_port()}",
                              kv_events_wait_s=2.0), ranks=3)
    run.step(1, 0.0, [A()], None)           # replica 1's first batch
    assert [r for r, _ in deadlines] == [0, 1, 2] and len({d for _, d in deadlines}) == 1
    run.step(0, 0.1, [A()], None)
    assert len(deadlines) == 3              # waited once, for all
    run.close(0.0)
