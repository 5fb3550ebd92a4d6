"""Ctrl-C or SIGTERM while the replay socket lingers (--kv-events-linger-s): the replay is
complete, so its summary is whole (not marked interrupted), but the exit code says the user
stopped the command (130 / 143); it was 0, as if the linger had run out (docs/live.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from live_helpers import ROOT, TRACE, free_port

pytest.importorskip("zmq")


def _lingering(command: str) -> tuple[subprocess.Popen, list[str], threading.Event]:
    args = [sys.executable, "-m", "kvcli", command, TRACE, "--num-blocks", "96",
            "--kv-events-endpoint", f"tcp://127.0.0.1:{free_port()}",
            "--kv-events-replay-endpoint", f"tcp://127.0.0.1:{free_port()}",
            "--kv-events-wait-s", "0", "--kv-events-linger-s", "120", "--json"]
    if command == "cluster":
        args += ["--replicas", "1"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    up = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if "stays up" in line:
                up.set()

    threading.Thread(target=read, daemon=True).start()
    return proc, lines, up


@pytest.mark.parametrize(("command", "sig", "code"), [
    ("replay", signal.SIGINT, 130), ("replay", signal.SIGTERM, 143),
    ("cluster", signal.SIGINT, 130)])
def test_a_signal_during_the_linger_keeps_the_summary_and_says_so_in_the_exit_code(
        command: str, sig: signal.Signals, code: int) -> None:
    proc, lines, up = _lingering(command)
    try:
        assert up.wait(90), lines          # the replay is done, the socket lingers
        time.sleep(0.3)
        start = time.monotonic()
        proc.send_signal(sig)
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.wait(timeout=60)
    finally:
        proc.kill()
    assert time.monotonic() - start < 30, lines       # not the linger's 120 s
    assert proc.returncode == code, lines
    doc = json.loads(out)
    routers = doc["routers"] if command == "cluster" else [doc]
    assert all(r["interrupted"] is False for r in routers)     # the replay is whole
    time.sleep(0.2)                                 # (the reader thread's last lines)
    assert lines[-1] == ("interrupted while the replay socket lingered: the replay and its "
                         "outputs are complete"), lines
