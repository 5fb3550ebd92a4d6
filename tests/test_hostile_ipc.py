"""A publisher's `ipc://PATH` endpoint (docs/live.md): binding it makes ZMQ unlink whatever is
at PATH. `--kv-events-endpoint ipc://TRACE` deleted the trace (a socket in its place, exit 0);
a second run on a live publisher's path took the path over in silence. PATH must be free or a
socket nobody listens on."""

from __future__ import annotations

import json
import socket

import pytest
from test_hostile_options import refused, runner

from kvcli.app import app

pytest.importorskip("zmq")
REQ = {"timestamp": 0, "prompt_token_ids": [1, 2, 3, 4, 5], "output_length": 3}


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(REQ) + "\n")
    return path


@pytest.mark.parametrize("flag", ["--kv-events-endpoint", "--kv-events-replay-endpoint"])
def test_a_path_that_is_no_socket_is_left_alone(trace, tmp_path, flag):
    keep = tmp_path / "keep.txt"
    keep.write_text("precious")
    for victim in (keep, trace):
        args = ["replay", str(trace), "--kv-events-wait-s", "0"]
        args += ([flag, f"ipc://{victim}"] if flag == "--kv-events-endpoint" else
                 ["--kv-events-endpoint", f"ipc://{tmp_path}/pub.sock", flag, f"ipc://{victim}"])
        refused(args, f"error: option {flag}: 'ipc://{victim}': {victim} exists and is not a "
                "socket: binding would delete it (ZMQ unlinks the path); give a new path")
    assert keep.read_text() == "precious" and trace.read_text() == json.dumps(REQ) + "\n"
    cluster = ["cluster", str(trace), "--replicas", "1", "--kv-events-endpoint", f"ipc://{keep}"]
    refused(cluster, f"error: option --kv-events-endpoint: 'ipc://{keep}': {keep} exists")
    assert keep.read_text() == "precious"


def test_a_socket_in_use_is_refused_and_a_left_one_is_rebound(trace, tmp_path):
    path = tmp_path / "p.sock"
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live.bind(str(path))
    live.listen(1)
    args = ["replay", str(trace), "--kv-events-endpoint", f"ipc://{path}",
            "--kv-events-wait-s", "0"]
    try:
        refused(args, f"error: option --kv-events-endpoint: 'ipc://{path}': another process is "
                "bound there (address already in use)")
    finally:
        live.close()        # (the path stays: a socket a finished run left)
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
