"""kvcli as a stand-in vLLM at its close: an interrupted replay does not linger, a finished one
says it lingers, batches ZMQ still held are said lost, a cluster waits to one deadline
(docs/live.md)."""

from __future__ import annotations

import json

import zmq
from live_helpers import TRACE, free_port


def test_an_interrupted_replay_does_not_linger(tmp_path):
    """Ctrl-C (or SIGTERM) mid-replay waited out the whole --kv-events-linger-s (up to a day)
    before the outputs were written, without a word."""
    import signal
    import subprocess
    import sys
    import time

    from live_helpers import ROOT

    port = free_port()
    args = [sys.executable, "-m", "kvcli", "replay", TRACE, "--num-blocks", "96",
            "--kv-events-endpoint", f"tcp://*:{port}", "--kv-events-replay-endpoint",
            f"tcp://*:{free_port()}", "--kv-events-wait-s", "0", "--kv-events-linger-s", "60",
            "--realtime", "0.05", "--metrics", str(tmp_path / "m.prom"), "--json"]
    zctx = zmq.Context()
    sub = zctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(f"tcp://127.0.0.1:{port}")
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Ctrl-C once the replay runs (its first batch heard), not after a fixed sleep: a slow
    # start (imports on a loaded machine) would take the signal before the replay began
    heard = sub.poll(60_000)
    sub.close(linger=0)
    zctx.term()
    assert heard and proc.poll() is None
    time.sleep(0.5)
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


def test_batches_still_queued_at_close_are_said_lost(tmp_path):
    """A subscriber that does not read: ZMQ discards what is still queued after the close's
    5 s, which no `dropped` count sees (1,100 of 2,806 batches lost with "dropped 0")."""
    from kvcore.kv_events import BlockStored
    from kvcore.live.options import LiveOptions
    from kvcore.live.session import LiveRun

    # ipc, not tcp: a unix socket's kernel buffers are a few hundred KB whatever the machine's
    # tcp_wmem says, so 600 batches of ~12 KB (~7 MB) cannot all leave a subscriber that reads
    # nothing (a 4 MB loopback tcp buffer took 300 of them on some machines)
    endpoint = f"ipc://{tmp_path}/kv.sock"
    said: list[str] = []
    run = LiveRun(LiveOptions(kv_events_endpoint=endpoint, kv_events_wait_s=5),
                  warn=said.append)
    zctx = zmq.Context()
    sub = zctx.socket(zmq.SUB)
    sub.setsockopt(zmq.RCVHWM, 1)
    sub.setsockopt(zmq.RCVBUF, 4096)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(endpoint)
    big = [BlockStored(block_hashes=list(range(16)), parent_block_hash=None,
                       token_ids=list(range(4096)), block_size=16, lora_id=None, medium="GPU",
                       lora_name=None)]
    for i in range(600):
        run.publishers[0].publish(i / 100, big)
    out = run.close(1.0)
    sub.close(linger=0)
    zctx.term()
    assert out["kv_events"][0]["dropped"] == 0
    assert said == run.said == [("kv events: the last batches were still queued after 5 s (a "
                                "subscriber not reading?) and were discarded: it missed them "
                                "(not counted in dropped)")]


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
