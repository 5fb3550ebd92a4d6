"""Drive the CPU tier's manager op by op: the format of the oracle's `offload_manager` mode.

First line ``{"config": {...}}`` (`CONFIG_DEFAULTS`), then one op a line (`OPS`). A key is an
int N (the 32-byte big-endian hash N, group 0) or ``[N, g]``; ``"pos"`` gives each key's end
position on the request's context before the call. Each op answers
``{"i", "op", "req"?, "result", "events"}``; a call vLLM asserts against answers
``{"i", "op", "req", "error"}`` and the script goes on (the manager may be partly updated, as
in vLLM). The last line is ``{"summary": {"ops", "errors", "config", "state"}}``.
(The format of the fixtures in tests/data/offload_cases/manager/, README there.)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import orjson

from kvcore.errors import InputError
from kvcore.offload.keys import ReqContext, key_group, key_hash, make_key
from kvcore.offload.manager import CPUOffloadingManager
from kvcore.offload.manager_reports import drain_events, reduce_stats
from kvcore.offload.misuse import OffloadMisuse

CONFIG_DEFAULTS = {"num_chunks": 8, "eviction_policy": "lru", "store_threshold": 0,
                   "max_tracker_size": 64000, "enable_events": True, "drain_events": "per_op"}
OPS = ("new_request", "lookup", "prepare_store", "complete_store", "prepare_load",
       "complete_load", "touch", "request_finished", "take_events", "state", "stats", "reset")
_NO_REQ = ("state", "stats", "reset", "take_events")


def key_in(x) -> bytes:
    n, g = (x[0], x[1]) if isinstance(x, list) else (x, 0)
    return make_key(int(n).to_bytes(32, "big"), int(g))


def key_out(key: bytes):
    n = int.from_bytes(key_hash(key), "big")
    g = key_group(key)
    return n if g == 0 else [n, g]


class OpScript:
    """One manager and the requests' contexts, answering ops."""

    def __init__(self, cfg: dict) -> None:
        self.cfg = cfg
        self.m = CPUOffloadingManager(cfg["num_chunks"], cfg["eviction_policy"],
                                      enable_events=cfg["enable_events"],
                                      store_threshold=cfg["store_threshold"],
                                      max_tracker_size=cfg["max_tracker_size"])
        self.contexts: dict[str, ReqContext] = {}

    def context(self, req: str) -> ReqContext:
        ctx = self.contexts.get(req)
        if ctx is None:               # the connector tells the manager of every request
            ctx = self.contexts[req] = ReqContext(req)
            self.m.on_new_request(ctx)
        return ctx

    def state(self) -> dict:
        m = self.m
        out = {"num_chunks": m.num_chunks, "num_allocated": m.num_allocated,
               "free_list": [c.chunk_id for c in m.free_list], "num_free": m.num_free,
               "num_evictable": m.num_evictable, "num_write_pending": m.num_write_pending}
        out.update(m.policy.state(key_out))
        if m.counts is not None:
            out["offer_counts"] = [[key_out(k), n] for k, n in m.counts.items()]
        return out

    def events(self) -> list[dict]:
        return [{"keys": [key_out(k) for k in ev.keys], "medium": "CPU", "removed": ev.removed,
                 "metadata_only": ev.metadata_only} for ev in drain_events(self.m)]

    def op(self, d: dict) -> dict:
        op = d["op"]
        if op not in OPS:
            raise ValueError(f"unknown op {op!r}")
        req = d.get("req")
        keys = [key_in(x) for x in d.get("keys", [])]
        if req is None and op not in _NO_REQ:
            raise ValueError(f'op {op} needs "req"')
        ctx = self.context(str(req)) if req is not None else None
        if "pos" in d:
            if len(d["pos"]) != len(keys):
                raise ValueError("pos must have one entry per key")
            assert ctx is not None
            for k, pos in zip(keys, d["pos"]):
                ctx.set_position(k, int(pos))
        m = self.m
        res: object = None
        if op == "lookup":
            res = [m.lookup(k) for k in keys]
        elif op == "prepare_store":
            assert ctx is not None
            offer = m.prepare_store(keys, ctx)
            res = None if offer is None else {
                "keys_to_store": [key_out(k) for k in offer.keys_to_store],
                "chunks": offer.chunks, "evicted": [key_out(k) for k in offer.evicted]}
        elif op == "complete_store":
            # the oracle reports, key by key as given, which pending writes this call ended
            pol = m.policy
            pending = {k for k in keys if (c := pol.get(k)) is not None and not c.is_ready}
            m.complete_store(keys, bool(d.get("success", True)))
            res = {"ready": [key_out(k) for k in keys
                             if k in pending and (c := pol.get(k)) is not None and c.is_ready],
                   "removed": [key_out(k) for k in keys if k in pending and pol.get(k) is None]}
        elif op == "prepare_load":
            assert ctx is not None
            res = {"chunks": m.prepare_load(keys, ctx)}
        elif op == "complete_load":
            m.complete_load(keys)
        elif op == "touch":
            assert ctx is not None
            m.touch(keys, ctx)
        elif op == "request_finished":
            assert ctx is not None
            m.on_request_finished(ctx)
        elif op == "stats":
            res = reduce_stats(m)
        elif op == "reset":
            m.reset()
        elif op == "state":
            res = self.state()
        rec: dict = {"op": op}
        if req is not None:
            rec["req"] = req
        rec["result"] = res
        if self.cfg["enable_events"] and (self.cfg["drain_events"] == "per_op"
                                          or op == "take_events"):
            rec["events"] = self.events()
        return rec


def _error(err: Exception) -> str:
    if isinstance(err, OffloadMisuse):
        msg = err.template.format(*(f"key {key_out(k)}" for k in err.keys))
        return f"AssertionError: {msg}"
    return f"{type(err).__name__}: {err}"


def read_config(first: dict, name: str) -> dict:
    if "config" not in first:
        raise InputError('the first line must be {"config": {...}}', path=name, line=1)
    unknown = sorted(set(first["config"]) - set(CONFIG_DEFAULTS))
    if unknown:
        raise InputError(f"unknown config keys: {unknown}", path=name, line=1, field="config")
    cfg = dict(CONFIG_DEFAULTS, **first["config"])
    if cfg["eviction_policy"] not in ("lru", "arc"):
        raise InputError("must be lru or arc", path=name, line=1, field="eviction_policy")
    if cfg["drain_events"] not in ("per_op", "explicit"):
        raise InputError("must be per_op or explicit", path=name, line=1, field="drain_events")
    return cfg


def run_ops(lines: Iterable[bytes | str], name: str = "<ops>") -> Iterator[dict]:
    """Answer an op script (its lines, blank and ``#`` lines skipped) line by line."""
    rows = [ln for ln in (str(x, "utf-8") if isinstance(x, bytes) else x for x in lines)
            if ln.strip() and not ln.lstrip().startswith("#")]
    if not rows:
        raise InputError("empty op script", path=name)
    cfg = read_config(orjson.loads(rows[0]), name)
    script = OpScript(cfg)
    errors = 0
    for i, row in enumerate(rows[1:]):
        d = orjson.loads(row)
        try:
            rec = script.op(d)
        except (AssertionError, ValueError, KeyError) as err:
            errors += 1
            rec = {"op": d.get("op"), "req": d.get("req"), "error": _error(err)}
        yield {"i": i, **rec}
    yield {"summary": {"ops": len(rows) - 1, "errors": errors, "config": cfg,
                       "state": script.state()}}
