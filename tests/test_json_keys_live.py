"""The JSON keys `test_json_keys_documented.py` did not reach, each against the doc that owns it:
`kvcli events listen`'s lines (batches, a gap, an undecodable payload), the replay summary's
`live` object, and the calibration file (`kvcli calibrate --gpu` writes it, `--calibration`
reads it): a committed file made on CPU (`tests/data/README.md`), which the reader accepts;
`test_calibration_cli.py` checks that a fresh run writes the same keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_json_keys_documented import EVENT_DOCS, REPLAY_DOCS, check, lines, run

from kvcore.clock.calibration import check_calibration

ROOT = Path(__file__).resolve().parents[1]
LIVE_DOCS = ("docs/live.md", *EVENT_DOCS)
CALIBRATION = ROOT / "tests" / "data" / "calibration" / "tiny-cpu.calibration.json"


def test_listen_lines_and_the_replay_live_object(tmp_path):
    pytest.importorskip("zmq")
    pytest.importorskip("msgspec")
    import zmq
    from live_helpers import free_port, kvcli

    port, odd_port = free_port(), free_port()
    # a listener gets the two other kinds of line from the test's own publisher: a batch 5
    # past the first expected (a gap: no replay endpoint) whose payload is no batch
    # (undecodable); (on one socket with the replay's, the two publishers' queues interleave)
    odd = kvcli("events", "listen", f"tcp://*:{odd_port}", "--count", "1",
                "--idle-timeout-s", "60")
    listen = None
    zctx = zmq.Context()
    pub = zctx.socket(zmq.XPUB)
    pub.setsockopt(zmq.LINGER, 1000)
    try:
        pub.connect(f"tcp://127.0.0.1:{odd_port}")
        assert pub.poll(60_000), "the listener did not subscribe"
        pub.recv()
        pub.send_multipart([b"", (5).to_bytes(8, "big"), b"\xc1"])
        # (started now: its idle timeout runs from its start, and the replay waits for it)
        listen = kvcli("events", "listen", f"tcp://*:{port}", "--idle-timeout-s", "3")
        trace = ROOT / "traces" / "shared-prefix.jsonl"
        doc = json.loads(run("replay", trace, "--num-blocks", "96", "--kv-events-endpoint",
                             f"tcp://127.0.0.1:{port}", "--kv-events-wait-s", "60",
                             "--metrics", tmp_path / "m.prom", "--realtime", "1000", "--json"))
        stdout, stderr = listen.communicate(timeout=60)
        odd_out, odd_err = odd.communicate(timeout=60)
    finally:
        if listen is not None:
            listen.kill()
        odd.kill()
        pub.close()
        zctx.term()
    assert listen.returncode == odd.returncode == 0, (stderr, odd_err)
    check(REPLAY_DOCS + ("docs/live.md",), doc, "replay with live options")
    got = lines(stdout.decode())
    assert [x["seq"] for x in got] == list(range(doc["live"]["kv_events"][0]["batches"]))
    odd_lines = lines(odd_out.decode())
    assert odd_lines[0] == {"gap": [0, 4]} and odd_lines[1]["seq"] == 5, odd_lines
    for line in got + odd_lines:
        check(LIVE_DOCS, line, "kvcli events listen")


def test_calibration_file_keys():
    doc = json.loads(CALIBRATION.read_text())
    check_calibration(doc, str(CALIBRATION))        # the reader takes it: its keys are there
    check(("docs/clock.md",), doc, "calibration file")
    # a CUDA run's `gpu` adds `cuda` (kvcli/calibration/run.py gpu_info), not made on CPU
    check(("docs/clock.md",), {"gpu": {"cuda": "12.8"}}, "calibration file on a GPU")

