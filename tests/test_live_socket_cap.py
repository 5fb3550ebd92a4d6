"""A cluster's publishers share one ZMQ context: its socket cap (1,023 by default) is raised
before the first socket is made. 1,100 replicas with `--kv-events-endpoint` ended in a traceback
(`zmq.error.ZMQError: Too many open files`) at the 1,023rd socket."""

from __future__ import annotations

import pytest
import zmq

from kvcore.errors import InputError
from kvcore.live import publisher
from kvcore.live.endpoints import is_bind_endpoint
from kvcore.live.options import LiveOptions
from kvcore.live.session import LiveRun

# a connecting publisher with a replay socket: 4 sockets a rank, the most
CONNECTING = LiveOptions(kv_events_endpoint="tcp://127.0.0.1:45000", kv_events_wait_s=0,
                         kv_events_replay_endpoint="tcp://*:46000")


class _Counting:
    """Stands in for ZmqPublisher: opens the sockets it opens (PUB; a connecting one's monitor
    pair, ZMQ's end and pyzmq's; the replay ROUTER: test_live_footprint.py measures them)."""

    def __init__(self, zctx, endpoint, replay_endpoint=None, **kw):
        kinds = [zmq.PUB, *([zmq.PAIR, zmq.PAIR] if not is_bind_endpoint(endpoint) else []),
                 *([zmq.ROUTER] if replay_endpoint is not None else [])]
        self.socks = [zctx.socket(k) for k in kinds]

    def close(self, *a, **kw):
        for s in self.socks:
            s.close(linger=0)


@pytest.mark.parametrize("opts, per_rank", [
    (CONNECTING, 4),
    (LiveOptions(kv_events_endpoint="tcp://127.0.0.1:45000", kv_events_wait_s=0), 3),
    # (a bound publisher without a replay socket: its PUB alone; it was counted 4 too)
    (LiveOptions(kv_events_endpoint="tcp://*:45000", kv_events_wait_s=0), 1)])
def test_1100_publishers_get_their_sockets(monkeypatch, opts, per_rank):
    monkeypatch.setattr(publisher, "ZmqPublisher", _Counting)
    run = LiveRun(opts, ranks=1100)
    try:
        assert len(run.publishers) == 1100           # up to 4,400 sockets in one context
        assert run.zctx.get(zmq.MAX_SOCKETS) == per_rank * 1100 + 16
    finally:
        for p in run.publishers:
            p.close()
        run.zctx.term()


def test_more_publishers_than_libzmq_allows_is_one_line(monkeypatch):
    monkeypatch.setattr(publisher, "ZmqPublisher", _Counting)
    limit = zmq.Context().get(zmq.SOCKET_LIMIT)
    ranks = limit // 4
    with pytest.raises(InputError) as err:
        LiveRun(CONNECTING, ranks=ranks)
    assert err.value.field == "kv_events_endpoint"
    assert err.value.message == (f"{ranks:,} publishers need up to {4 * ranks + 16:,} ZMQ sockets, "
                              f"more than this libzmq's limit of {limit:,}: publish fewer "
                              "replicas")
