"""Hand-built cluster views and requests for the router tests (`test_routers*.py`)."""

from kvcore.cluster.router import RouteRequest, make_router
from kvcore.cluster.view import ClusterView
from kvcore.kv_events import BlockStored

BS = 16


def view(n, num_blocks=1000, events=None, now_ms=0.0):
    v = ClusterView(n, BS, num_blocks, hit=lambda i, r: 0, events=events)
    v.now_ms = now_ms
    return v


def req(hashes, prompt_len=None, rid="r", index=0):
    plen = len(hashes) * BS if prompt_len is None else prompt_len
    return RouteRequest(rid, index, 0.0, plen, 8, list(hashes), None)


def mk(name, n=3, seed=0, **opts):
    return make_router(name, n, {k: str(v) for k, v in opts.items()}, seed, BS)


def stored(hashes, medium="GPU"):
    return BlockStored(list(hashes), None, [], BS, None, medium, None)


def routed(router, r, replica, v):
    router.on_routed(r, replica, v)
