"""`Recorder`: the one BlockTracer the replay installs.

It counts evictions, samples KV usage after every block operation that can raise it, and
forwards to a `JsonlEvents` (`events.py`) when there is one. It is also the scheduler's
observer, so `admit` is written before the block events the admission causes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvcore.engine.events import (
    ALLOCATE,
    CACHE,
    EVICT,
    FREE,
    KINDS,
    TOUCH,
    JsonlEvents,
)
from kvcore.engine.hash_json import hash_ints
from kvcore.kv_events import hash_to_int


class Recorder:
    """BlockTracer + scheduler observer: counts, usage peak, and our event lines."""

    def __init__(self, sink: JsonlEvents | None, num_usable: int, *,
                 is_counted: Callable[[Any, bool], bool] = lambda req, resumed: not resumed,
                 admit_extra: Callable[[Any], dict] | None = None,
                 admit_parts: Callable[[], list | None] | None = None) -> None:
        """`is_counted(req, resumed)` says whether an admission counts in the hit rate (the
        warm-up); `admit_extra(req)` gives the extra fields of an `admit` line, and then
        `admit_parts()` the lists its marks stand for (`JsonlEvents.pieces`)."""
        self.req: str | None = None
        self.sink = sink
        # Block lines from their lists when the sink writes its own lines
        # (`JsonlEvents.lists_line`: as text, or as records for its line thread):
        # no dict, no int per hash (the event path, interpreted and through dicts, was 29% of
        # the samples of the first 3,000 conversation requests with events; compiled and as
        # text 23%, of a run a quarter shorter); as dicts for a sink that consumes them.
        self.text = sink is not None and sink.writes_arrays()
        self.pool: Any = None            # the pool watched: its constructor calls `attach`
        self.num_usable = max(num_usable, 1)
        self.evictions = 0
        self.peak_used = 0
        self.is_counted = is_counted
        self.admit_extra = admit_extra
        self.admit_parts = admit_parts
        # Evictions wait here until the allocation that caused them is reported, then go out
        # as one `evict` line per group (blocks in eviction order).
        self._ev_blocks: list[int] = []
        self._ev_hashes: Any = []    # the raw hashes (text lines), else their 64-bit ints
        self._ev_groups: list[int] = []
        self._ev_req: str | None = None

    def flush(self) -> None:
        """Write the pending evictions: one line per group, groups in order of first eviction.
        Called before any other line (the pool reports an allocation's evictions before the
        allocation itself) and at the end."""
        blocks, hashes, groups = self._ev_blocks, self._ev_hashes, self._ev_groups
        sink = self.sink
        if not blocks or sink is None:
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
            self._evict_line(sink, req, g0, blocks, hashes)
            return
        for g in dict.fromkeys(groups):
            idx = [i for i, x in enumerate(groups) if x == g]
            self._evict_line(sink, req, g, [blocks[i] for i in idx], [hashes[i] for i in idx])

    def _evict_line(self, sink: JsonlEvents, req: str | None, group: int, blocks: list[int],
                    hashes: Any) -> None:
        """``hashes``: the raw hashes when the lines are text, else their 64-bit forms."""
        if self.text:
            sink.lists_line(EVICT, req, group, blocks, hashes)
        else:
            sink.evict(req, group, blocks, hashes)

    # -- BlockTracer ---------------------------------------------------------------------------
    def attach(self, pool: Any) -> None:
        self.pool = pool

    def on_allocate(self, group: int, block_ids: list[int]) -> None:
        used = self.num_usable - self.pool.free_block_queue.num_free_blocks
        self.peak_used = max(self.peak_used, used)
        if self.sink is not None:
            if self._ev_blocks:
                self.flush()
            if self.text:
                self.sink.lists_line(ALLOCATE, self.req, group, block_ids)
            else:
                self.sink.put("allocate", self.req, group, {"blocks": list(block_ids)})

    def on_touch(self, group: int, block_ids: list[int], hashes: list[bytes]) -> None:
        used = self.num_usable - self.pool.free_block_queue.num_free_blocks
        self.peak_used = max(self.peak_used, used)
        if self.sink is not None:
            if self._ev_blocks:
                self.flush()
            self._hashed_line(TOUCH, group, block_ids, hashes)

    def on_cache(self, group: int, block_ids: list[int], hashes: list[bytes]) -> None:
        if self.sink is not None:
            if self._ev_blocks:
                self.flush()
            self._hashed_line(CACHE, group, block_ids, hashes)

    def _hashed_line(self, kind: int, group: int, block_ids: list[int],
                     hashes: list[bytes]) -> None:
        sink = self.sink
        assert sink is not None
        if self.text:
            sink.lists_line(kind, self.req, group, block_ids, hashes)
        else:
            sink.put(KINDS[kind].decode(), self.req, group, {"blocks": list(block_ids),
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
            self._ev_hashes.append(block_hash if self.text else hash_to_int(block_hash))
            self._ev_groups.append(group)

    def on_evict_many(self, groups: list[int], block_ids: list[int], hashes: list[bytes]
                      ) -> None:
        """The evictions of one `get_new_blocks` call (the pool's batch form of `on_evict`)."""
        self.evictions += len(block_ids)
        if self.sink is not None:
            if self._ev_blocks:
                self.flush()
            kept = hashes if self.text else hash_ints(hashes)
            # one assignment, no call between the stores (a signal cannot split them)
            self._ev_req, self._ev_blocks, self._ev_hashes, self._ev_groups = \
                self.req, block_ids, kept, groups

    def on_free(self, group: int, block_ids: list[int], freed: list[int],
                evictable: list[int]) -> None:
        if self.sink is not None:
            if self._ev_blocks:
                self.flush()
            if self.text:
                self.sink.lists_line(FREE, self.req, group, block_ids, freed, evictable)
            else:
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
            parts = self.admit_parts() if self.admit_parts is not None else None
            self.sink.release(("admit", req.request_id, None, fields), parts)

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
