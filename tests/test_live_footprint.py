"""What one rank's publisher opens, as `live.options.rank_footprint` counts it for both the
ZMQ context's socket cap (`LiveRun`) and the open-file check (`kvcli/open_files.py`): measured
on real publishers, two ranks in a fresh context. The open-file count said 2 files a socket and
1-2 sockets a rank, short of a connecting publisher's monitor pair (4 files a rank, not 2); the
socket cap said 4 a rank for every endpoint, where a bound one without a replay socket makes
1."""

from __future__ import annotations

import os

import pytest
import zmq
from live_helpers import free_port

from kvcore.live.endpoints import offset_endpoint_port
from kvcore.live.options import LiveOptions, rank_footprint
from kvcore.live.publisher import ZmqPublisher

RANKS = 2


def _open_now() -> int:
    return len(os.listdir("/proc/self/fd"))


def _endpoints(kind: str, replay: bool, tmp_path) -> tuple[str, str | None]:
    # (rank 1 offsets a tcp port by 1: two free ports apart)
    main = {"tcp bind": f"tcp://*:{free_port()}", "tcp connect": f"tcp://127.0.0.1:{free_port()}",
            "ipc": f"ipc://{tmp_path}/kv.sock"}[kind]
    return main, f"tcp://*:{free_port()}" if replay else None


def _build(main: str, replay: str | None, ranks: int, max_sockets: int | None = None) -> int:
    """The files `ranks` publishers opened in a fresh context (its own included); raises
    ZMQError past `max_sockets`."""
    before = _open_now()
    zctx = zmq.Context()
    if max_sockets is not None:
        zctx.set(zmq.MAX_SOCKETS, max_sockets)
    pubs: list[ZmqPublisher] = []
    try:
        for r in range(ranks):
            pubs.append(ZmqPublisher(zctx, offset_endpoint_port(main, r),
                                     replay_endpoint=offset_endpoint_port(replay, r), wait_s=0))
        return _open_now() - before
    finally:
        for p in pubs:
            p._close_sockets(linger=0)
        zctx.term()


@pytest.mark.parametrize("kind, replay, sockets, files", [
    ("tcp bind", False, 1, 2), ("tcp bind", True, 2, 4),
    ("tcp connect", False, 3, 4), ("tcp connect", True, 4, 6),
    ("ipc", False, 1, 2), ("ipc", True, 2, 4)])
def test_a_ranks_sockets_and_files_are_counted_as_they_open(tmp_path, kind, replay, sockets,
                                                           files):
    main, rep = _endpoints(kind, replay, tmp_path)
    assert rank_footprint(main, rep) == (sockets, files)
    ranks = 1 if kind == "ipc" else RANKS       # (an ipc endpoint serves one rank)
    opts = LiveOptions(kv_events_endpoint=main, kv_events_replay_endpoint=rep)
    assert opts.zmq_sockets(ranks) == ranks * sockets
    # the context's cap: exactly the sockets counted are made
    _build(main, rep, ranks, max_sockets=ranks * sockets)
    with pytest.raises(zmq.ZMQError):
        _build(main, rep, ranks, max_sockets=ranks * sockets - 1)
    opened = _build(main, rep, ranks)
    if kind != "tcp connect":
        assert opened == opts.open_files(ranks) == 5 + ranks * files
    else:
        # (a connection's descriptor exists while it is up or being tried, not between tries:
        # nothing listens here)
        assert opts.open_files(ranks) - ranks <= opened <= opts.open_files(ranks)
