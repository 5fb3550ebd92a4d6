"""Event sinks: where a replay's record goes, streamed line by line (never held in memory).

Two formats (documented in docs/events.md):

* `JsonlEvents` (ours, schema_version 1): a `header` line, then one line per block operation per
  group (`allocate`, `touch`, `cache`, `evict`, `free`) and per request event (`arrive`, `admit`,
  `preempt`, `finish`, `reject`), each with `seq`, `step`, `t_ms`, `kind`, `req`, `group`; the
  stream ends with `end` (the summary) or, after Ctrl-C, `interrupted`.
* `VllmEvents`: vLLM's own KV event batches, `{"ts", "events": [BlockStored | BlockRemoved |
  AllBlocksCleared, ...], "data_parallel_rank": null}`, one line per engine step that published
  events, exactly what vLLM's `KVEventBatch` carries (the stream KV-aware routers index).

`Recorder` is the one BlockTracer the replay installs: it counts evictions, samples KV usage after
every block operation that can raise it, and forwards to a `JsonlEvents` when there is one. It is
also the scheduler's observer, so `admit` is written before the block events the admission causes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any

import orjson

_dumps = orjson.dumps
_from_bytes = int.from_bytes
_frombuffer: Any = None     # numpy's, imported on first use: a replay without events never
                            # needs numpy (its import is ~0.09 s of every process's start)


def hash_ints(hashes: list[bytes]) -> list[int]:
    """The 64-bit event form of block hashes (`kvcore.kv_events.hash_to_int`, inlined: this
    runs for every block of every event). Long lists of equal-length hashes (one hash
    algorithm) go through numpy: the last 8 bytes of each, big-endian, in one pass."""
    n = len(hashes)
    if n >= 12:
        size = len(hashes[0])
        if size % 8 == 0:
            raw = b"".join(hashes)
            if len(raw) == size * n:
                global _frombuffer
                if _frombuffer is None:
                    import numpy
                    _frombuffer = numpy.frombuffer
                k = size // 8
                return _frombuffer(raw, dtype=">u8")[k - 1::k].tolist()
    return [_from_bytes(h[-8:], "big") for h in hashes]


class JsonlEvents:
    """Our event stream. The replay sets `step` and `t_ms` as the clock moves."""

    format = "jsonl"

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.seq = 0
        self.step = 0
        self._t = 0.0
        self._held: list[tuple] | None = None
        self._evict_key: tuple | None = None
        self._evict_head = b""

    @property
    def t_ms(self) -> float:
        return self._t

    @t_ms.setter
    def t_ms(self, value: float) -> None:
        self._t = round(value, 6)

    def header(self, fields: dict) -> None:
        self.emit({"kind": "header", "schema_version": 1, **fields})

    def write(self, kind: str, req: str | None, group: int | None = None, **fields: Any) -> None:
        self.put(kind, req, group, fields)

    def put(self, kind: str, req: str | None, group: int | None, fields: dict) -> None:
        """`write` without keyword packing (the hot path)."""
        if self._held is not None:
            self._held.append((kind, req, group, fields))
            return
        obj = {"seq": self.seq, "step": self.step, "t_ms": self._t, "kind": kind, "req": req,
               "group": group}
        obj.update(fields)
        self.emit(obj)
        self.seq += 1

    def emit(self, obj: dict) -> None:
        """Write one event object (override to consume events in-process)."""
        self.out.write(_dumps(obj) + b"\n")

    def evict(self, req: str | None, group: int, block_ids: list[int], hashes: list[int]
              ) -> None:
        """One `evict` line for the blocks one allocation evicted in one group. Evictions are
        most of a long replay's lines, so when nothing overrides `emit` the line is formatted
        directly; the bytes are what `put` would write (orjson encodes the strings, the float
        and the lists)."""
        if self._held is not None or type(self).emit is not JsonlEvents.emit:
            self.put("evict", req, group, {"blocks": block_ids, "hashes": hashes})
            return
        key = (self.step, self._t, req)
        if key != self._evict_key:
            self._evict_key = key
            self._evict_head = (b',"step":%d,"t_ms":%s,"kind":"evict","req":%s,"group":'
                                % (self.step, _dumps(self._t), _dumps(req)))
        self.out.write(b'{"seq":%d%s%d,"blocks":%s,"hashes":%s}\n'
                       % (self.seq, self._evict_head, group, _dumps(block_ids),
                          _dumps(hashes)))
        self.seq += 1

    # An admission attempt's block events are held until we know whether it was admitted, so the
    # `admit` line precedes them (consumers see the cache as the lookup saw it).
    def hold(self) -> None:
        self._held = []

    def release(self, first: tuple | None = None) -> None:
        held, self._held = self._held or [], None
        if first is not None:
            self.put(*first)
        for item in held:
            self.put(*item)

    def end(self, summary: dict) -> None:
        self.write("end", None, summary=summary)

    def interrupted(self) -> None:
        if self._held is not None:
            self.release()
        self.write("interrupted", None)


class CallbackEvents(JsonlEvents):
    """Our event stream handed to a function, one dict per event (in-process consumers)."""

    def __init__(self, fn: Any) -> None:
        super().__init__(None)  # type: ignore[arg-type]
        self.fn = fn

    def emit(self, obj: dict) -> None:
        self.fn(obj)


class VllmEvents:
    """vLLM's KV event batches (needs the manager built with KV events enabled)."""

    format = "vllm"

    def __init__(self, out: IO[bytes], rank: int | None = None) -> None:
        self.out = out
        self.rank = rank            # `data_parallel_rank` (a cluster's replica; None alone)

    def batch(self, ts_s: float, events: list) -> None:
        if events:
            self.out.write(_dumps({"ts": round(ts_s, 9), "events": [e.to_dict() for e in events],
                                   "data_parallel_rank": self.rank}) + b"\n")

    def interrupted(self) -> None:
        self.out.write(_dumps({"interrupted": True}) + b"\n")


class Recorder:
    """BlockTracer + scheduler observer: counts, usage peak, and our event lines."""

    def __init__(self, sink: JsonlEvents | None, num_usable: int, *,
                 is_counted: Callable[[Any, bool], bool] = lambda req, resumed: not resumed,
                 admit_extra: Callable[[Any], dict] | None = None) -> None:
        """`is_counted(req, resumed)` says whether an admission counts in the hit rate (the
        warm-up); `admit_extra(req)` gives the extra fields of an `admit` line."""
        self.req: str | None = None
        self.sink = sink
        self.pool: Any = None            # the pool watched: its constructor calls `attach`
        self.num_usable = max(num_usable, 1)
        self.evictions = 0
        self.peak_used = 0
        self.is_counted = is_counted
        self.admit_extra = admit_extra
        # Evictions wait here until the allocation that caused them is reported, then go out
        # as one `evict` line per group (blocks in eviction order).
        self._ev_blocks: list[int] = []
        self._ev_hashes: list[int] = []
        self._ev_groups: list[int] = []
        self._ev_req: str | None = None

    def flush(self) -> None:
        """Write the pending evictions: one line per group, groups in order of first eviction.
        Called before any other line (the pool reports an allocation's evictions before the
        allocation itself) and at the end."""
        blocks, hashes, groups = self._ev_blocks, self._ev_hashes, self._ev_groups
        if not blocks:
            return
        self._ev_blocks, self._ev_hashes, self._ev_groups = [], [], []
        # A Ctrl-C / SIGTERM can land between `on_evict`'s appends: the last flush (of an
        # interrupted run) writes only the evictions recorded whole.
        n = min(len(blocks), len(hashes), len(groups))
        if n < len(blocks) or n < len(groups):
            blocks, hashes, groups = blocks[:n], hashes[:n], groups[:n]
            if not n:
                return
        req = self._ev_req
        g0 = groups[0]
        if groups.count(g0) == len(groups):
            self.sink.evict(req, g0, blocks, hashes)
            return
        for g in dict.fromkeys(groups):
            idx = [i for i, x in enumerate(groups) if x == g]
            self.sink.evict(req, g, [blocks[i] for i in idx], [hashes[i] for i in idx])

    # -- BlockTracer ---------------------------------------------------------------------------
    def attach(self, pool: Any) -> None:
        self.pool = pool

    def on_allocate(self, group: int, block_ids: list[int]) -> None:
        used = self.num_usable - self.pool.free_block_queue.num_free_blocks
        self.peak_used = max(self.peak_used, used)
        if self.sink is not None:
            if self._ev_blocks:
                self.flush()
            self.sink.put("allocate", self.req, group, {"blocks": list(block_ids)})

    def on_touch(self, group: int, block_ids: list[int], hashes: list[bytes]) -> None:
        used = self.num_usable - self.pool.free_block_queue.num_free_blocks
        self.peak_used = max(self.peak_used, used)
        if self.sink is not None:
            if self._ev_blocks:
                self.flush()
            self.sink.put("touch", self.req, group, {"blocks": list(block_ids),
                                                     "hashes": hash_ints(hashes)})

    def on_cache(self, group: int, block_ids: list[int], hashes: list[bytes]) -> None:
        if self.sink is not None:
            if self._ev_blocks:
                self.flush()
            self.sink.put("cache", self.req, group, {"blocks": list(block_ids),
                                                     "hashes": hash_ints(hashes)})

    def on_evict(self, group: int, block_id: int, block_hash: bytes) -> None:
        self.evictions += 1
        if self.sink is not None:
            if not self._ev_blocks:
                self._ev_req = self.req
            elif self._ev_req != self.req:
                self.flush()
                self._ev_req = self.req
            self._ev_blocks.append(block_id)
            self._ev_hashes.append(_from_bytes(block_hash[-8:], "big"))
            self._ev_groups.append(group)

    def on_evict_many(self, groups: list[int], block_ids: list[int], hashes: list[bytes]
                      ) -> None:
        """The evictions of one `get_new_blocks` call (the pool's batch form of `on_evict`)."""
        self.evictions += len(block_ids)
        if self.sink is not None:
            if self._ev_blocks:
                self.flush()
            ints = hash_ints(hashes)
            # one assignment, no call between the stores (a signal cannot split them)
            self._ev_req, self._ev_blocks, self._ev_hashes, self._ev_groups = \
                self.req, block_ids, ints, groups

    def on_free(self, group: int, block_ids: list[int], freed: list[int],
                evictable: list[int]) -> None:
        if self.sink is not None:
            if self._ev_blocks:
                self.flush()
            self.sink.put("free", self.req, group, {"blocks": list(block_ids),
                                                    "freed": list(freed),
                                                    "evictable": list(evictable)})

    # -- scheduler observer ----------------------------------------------------------------------
    def on_admit_attempt(self, req: Any) -> None:
        if self.sink is not None:
            if self._ev_blocks:
                self.flush()
            self.sink.hold()

    def on_admit(self, req: Any, hit_tokens: int, resumed: bool) -> None:
        if self.sink is not None:
            fields = {"prompt_tokens": req.num_tokens, "hit_tokens": hit_tokens,
                      "resumed": resumed, "counted": self.is_counted(req, resumed)}
            if self.admit_extra is not None:
                fields.update(self.admit_extra(req))
            if self._ev_blocks:
                self.flush()
            self.sink.release(("admit", req.request_id, None, fields))

    def on_admit_failed(self, req: Any) -> None:
        if self.sink is not None:
            if self._ev_blocks:
                self.flush()
            self.sink.release()

    def on_preempt(self, req: Any, num_computed_tokens: int) -> None:
        if self.sink is not None:
            if self._ev_blocks:
                self.flush()
            self.sink.write("preempt", req.request_id, num_computed_tokens=num_computed_tokens)

    def on_finish(self, req: Any, latency: dict | None = None) -> None:
        """``latency``: the request's `ttft_ms`, `tpot_ms`, `e2e_ms`, `queue_ms` (the engine's)."""
        if self.sink is not None:
            if self._ev_blocks:
                self.flush()
            fields = {"output_tokens": req.num_output_tokens}
            if latency is not None:
                fields.update(latency)
            self.sink.put("finish", req.request_id, None, fields)
