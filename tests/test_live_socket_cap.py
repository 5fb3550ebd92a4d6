"""A cluster's publishers share one ZMQ context: its socket cap (1,023 by default) is raised
before the first socket is made. 1,100 replicas with `--kv-events-endpoint` ended in a traceback
(`zmq.error.ZMQError: Too many open files`) at the 1,023rd socket."""

from __future__ import annotations

import pytest
import zmq

from kvcore.errors import InputError
from kvcore.live import publisher
from kvcore.live.options import LiveOptions
from kvcore.live.session import LiveRun


class _Counting:
    """Stands in for ZmqPublisher: opens the sockets a connecting publisher with a replay socket
    opens (PUB, the monitor's pair, ROUTER; ZMQ makes the monitor's other end itself)."""

    def __init__(self, zctx, endpoint, **kw):
        self.socks = [zctx.socket(zmq.PUB), zctx.socket(zmq.PAIR), zctx.socket(zmq.ROUTER),
                      zctx.socket(zmq.PAIR)]

    def close(self, *a, **kw):
        for s in self.socks:
            s.close(linger=0)


def test_1100_publishers_get_their_sockets(monkeypatch):
    monkeypatch.setattr(publisher, "ZmqPublisher", _Counting)
    run = LiveRun(LiveOptions(kv_events_endpoint="tcp://127.0.0.1:45000", kv_events_wait_s=0),
                  ranks=1100)
    try:
        assert len(run.publishers) == 1100           # 4,400 sockets in one context
        assert run.zctx.get(zmq.MAX_SOCKETS) == 4 * 1100 + 16
    finally:
        for p in run.publishers:
            p.close()
        run.zctx.term()


def test_more_publishers_than_libzmq_allows_is_one_line(monkeypatch):
    monkeypatch.setattr(publisher, "ZmqPublisher", _Counting)
    limit = zmq.Context().get(zmq.SOCKET_LIMIT)
    ranks = limit // 4
    with pytest.raises(InputError) as err:
        LiveRun(LiveOptions(kv_events_endpoint="tcp://127.0.0.1:45000", kv_events_wait_s=0),
                ranks=ranks)
    assert err.value.field == "kv_events_endpoint"
    assert err.value.message == (f"{ranks:,} publishers need up to {4 * ranks + 16:,} ZMQ sockets, "
                              f"more than this libzmq's limit of {limit:,}: publish fewer "
                              "replicas")
