"""ARC for the CPU tier, as vLLM 0.33 adapts it (`cpu/policies/arc.py`).

T1 holds chunks seen once, T2 chunks a request reused; B1 and B2 remember the keys evicted
from each (ghosts). All four are ordered, least recent first. The rules that differ from the
textbook:

* a new chunk always goes to T1; promotion to T2 happens only when a request finishes, for the
  chunks it reused (loaded, or offered while resident and ready) and did not insert itself;
* the target size of T1 (``target``, a float from 0) moves only on store misses: an absent key
  offered while in B1 raises it by ``max(1, |B2| / |B1|)`` (at most the capacity), one in B2
  lowers it by ``max(1, |B1| / |B2|)`` (at least 0; Python's ``max`` then gives the int 0, as in
  vLLM), once per key per request, even when the offer fails;
* each victim comes from T1 while the simulated ``|T1| >= int(target)``, else from T2, else from
  T1 again (idle, unprotected chunks only; the scans never restart); each ghost list is then
  trimmed to the capacity on its own.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

from kvcore.offload.keys import NO_KEY, ChunkStatus, ReqContext, order_request_keys
from kvcore.offload.policy import POLICIES, CachePolicy


class ARCPolicy(CachePolicy):
    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        self.target: float = 0.0
        self.t1: OrderedDict[bytes, ChunkStatus] = OrderedDict()
        self.t2: OrderedDict[bytes, ChunkStatus] = OrderedDict()
        self.b1: OrderedDict[bytes, None] = OrderedDict()
        self.b2: OrderedDict[bytes, None] = OrderedDict()

    def get(self, key: bytes) -> ChunkStatus | None:
        chunk = self.t1.get(key)
        return chunk if chunk is not None else self.t2.get(key)

    def resident(self):
        return [*self.t1, *self.t2]

    def insert(self, key: bytes, chunk: ChunkStatus, ctx: ReqContext) -> None:
        self.t1[key] = chunk
        self.b1.pop(key, None)
        self.b2.pop(key, None)

    def remove(self, key: bytes) -> None:
        if self.t1.pop(key, None) is None:
            self.t2.pop(key, None)

    def _ghost_hit(self, key: bytes) -> None:
        if key in self.b1:
            delta = max(1, len(self.b2) / len(self.b1))
            self.target = min(self.target + delta, self.capacity)
            self.b1.move_to_end(key)
        elif key in self.b2:
            delta = max(1, len(self.b1) / len(self.b2))
            self.target = max(self.target - delta, 0)
            self.b2.move_to_end(key)

    def on_store_miss(self, keys: list[bytes], ctx: ReqContext) -> None:
        for key in reversed(keys):
            self._ghost_hit(key)

    def touch(self, keys: list[bytes], ctx: ReqContext) -> None:
        for key in reversed(keys):
            if key in self.t1:
                chunk = self.t1.pop(key)
                # a chunk still being written was not really used twice: MRU of T1
                (self.t2 if chunk.is_ready else self.t1)[key] = chunk
            elif key in self.t2:
                self.t2.move_to_end(key)
            else:
                self._ghost_hit(key)

    def on_request_finished(self, key_groups, insertion_only, reused, ctx) -> None:
        t1, t2 = self.t1, self.t2
        for key in reversed(order_request_keys(key_groups, ctx)):
            if key in insertion_only:      # a store is not a reuse: only the recency moves
                if key in t1:
                    t1.move_to_end(key)
                elif key in t2:
                    t2.move_to_end(key)
            elif key in reused:
                if key in t1:
                    t2[key] = t1.pop(key)
                elif key in t2:
                    t2.move_to_end(key)

    def evict(self, n: int, protected: set[bytes], freed: list[ChunkStatus]
              ) -> list[bytes] | None:
        if n == 0:
            return []
        chosen: list[tuple[bytes, ChunkStatus, bool]] = []   # (key, chunk, from T1)
        t1_size = len(self.t1)
        t1_scan = iter(self.t1.items())
        t2_scan = iter(self.t2.items())

        def next_idle(scan: Iterator[tuple[bytes, ChunkStatus]]):
            for key, chunk in scan:
                if chunk.ref_cnt == 0 and key not in protected:
                    return key, chunk
            return None

        for _ in range(n):
            found = None
            if t1_size >= int(self.target):
                found = next_idle(t1_scan)
                if found is not None:
                    chosen.append((*found, True))
                    t1_size -= 1
                    continue
            found = next_idle(t2_scan)
            if found is not None:
                chosen.append((*found, False))
                continue
            found = next_idle(t1_scan)
            if found is None:
                return None
            chosen.append((*found, True))
            t1_size -= 1
        out = []
        for key, chunk, from_t1 in chosen:
            if from_t1:
                del self.t1[key]
                self.b1[key] = None
            else:
                del self.t2[key]
                self.b2[key] = None
            chunk.key = NO_KEY
            out.append(key)
            freed.append(chunk)
        for ghosts in (self.b1, self.b2):
            for _ in range(len(ghosts) - self.capacity):
                ghosts.popitem(last=False)
        return out

    def clear(self) -> None:
        self.t1.clear()
        self.t2.clear()
        self.b1.clear()
        self.b2.clear()
        self.target = 0.0

    def state(self, key_out) -> dict:
        return {"t1": [[key_out(k), c.chunk_id, c.ref_cnt] for k, c in self.t1.items()],
                "t2": [[key_out(k), c.chunk_id, c.ref_cnt] for k, c in self.t2.items()],
                "b1": [key_out(k) for k in self.b1], "b2": [key_out(k) for k in self.b2],
                "target_t1_size": self.target}

    def end_state(self, key_out) -> dict:
        return {"t1": [key_out(k) for k in self.t1], "t2": [key_out(k) for k in self.t2],
                "b1": [key_out(k) for k in self.b1], "b2": [key_out(k) for k in self.b2],
                "target_t1_size": self.target}


POLICIES["arc"] = ARCPolicy
