"""The BlockTracer hook: who did what to which block, for the replay's event stream.

A tracer is an optional object given to `KVCacheManager` (which hands it to the pool and the
managers). When it is None the hot path pays one ``is not None`` test per operation and nothing
else. The caller sets ``tracer.req`` to the id of the request the manager is working for; every
method gets the KV cache group index first:

* ``on_allocate(group, block_ids)``            fresh blocks handed to a request
* ``on_touch(group, block_ids, hashes)``       cached blocks a request adopts (a prefix hit)
* ``on_cache(group, block_ids, hashes)``       hashes registered for newly full blocks
* ``on_evict(group, block_id, block_hash)``    a cached hash dropped by `evict_blocks`, a
                                               reset, or a block re-cached under a new hash
* ``on_evict_many(groups, block_ids, hashes)`` the cached hashes one `get_new_blocks` call
                                               dropped by reusing their blocks (parallel
                                               lists, in eviction order)
* ``on_free(group, block_ids, freed, evictable)`` every block a request released, in free
  order (shared ones included; null blocks left out); ``freed`` are those whose ref count
  reached 0, ``evictable`` those of ``freed`` still holding a hash (cached, reusable).

``attach(pool)`` is called once, by the `BlockPool` constructor: a tracer may read the pool it
watches (the replay's recorder samples the free count after each allocation).

``on_evict_many`` is the batch form of ``on_evict`` (the replay's recorder writes one `evict`
line per allocation); `BaseTracer`'s default calls ``on_evict`` once per block.

Hashes are the raw block hash bytes (without the group id); `kvcore.kv_events.hash_to_int`
gives the 64-bit form events use. A reset calls ``on_evict`` for every cached block with
``req`` as the caller left it.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class BlockTracer(Protocol):
    """Told every block operation; the whole contract is the module docstring's."""

    req: str | None

    def attach(self, pool: Any) -> None: ...       # the pool it watches, from its constructor

    def on_allocate(self, group: int, block_ids: list[int]) -> None: ...

    def on_touch(self, group: int, block_ids: list[int], hashes: list[bytes]) -> None: ...

    def on_cache(self, group: int, block_ids: list[int], hashes: list[bytes]) -> None: ...

    def on_evict(self, group: int, block_id: int, block_hash: bytes) -> None: ...

    def on_evict_many(self, groups: list[int], block_ids: list[int],
                      hashes: list[bytes]) -> None: ...

    def on_free(self, group: int, block_ids: list[int], freed: list[int],
                evictable: list[int]) -> None: ...


class BaseTracer:
    """A tracer that does nothing; subclass it and override what you need."""

    def __init__(self) -> None:
        self.req: str | None = None

    def attach(self, pool: Any) -> None:
        pass

    def on_allocate(self, group: int, block_ids: list[int]) -> None:
        pass

    def on_touch(self, group: int, block_ids: list[int], hashes: list[bytes]) -> None:
        pass

    def on_cache(self, group: int, block_ids: list[int], hashes: list[bytes]) -> None:
        pass

    def on_evict(self, group: int, block_id: int, block_hash: bytes) -> None:
        pass

    def on_evict_many(self, groups: list[int], block_ids: list[int],
                      hashes: list[bytes]) -> None:
        """One `get_new_blocks` call's evictions; by default one ``on_evict`` per block."""
        for g, b, h in zip(groups, block_ids, hashes):
            self.on_evict(g, b, h)

    def on_free(self, group: int, block_ids: list[int], freed: list[int],
                evictable: list[int]) -> None:
        pass


class RecordingTracer(BaseTracer):
    """Keeps every call as a tuple ``(kind, req, group, *args)`` in ``records`` (tests, views)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[tuple] = []

    def take(self) -> list[tuple]:
        out, self.records = self.records, []
        return out

    def on_allocate(self, group, block_ids):
        self.records.append(("allocate", self.req, group, list(block_ids)))

    def on_touch(self, group, block_ids, hashes):
        self.records.append(("touch", self.req, group, list(block_ids), list(hashes)))

    def on_cache(self, group, block_ids, hashes):
        self.records.append(("cache", self.req, group, list(block_ids), list(hashes)))

    def on_evict(self, group, block_id, block_hash):
        self.records.append(("evict", self.req, group, block_id, block_hash))

    def on_free(self, group, block_ids, freed, evictable):
        self.records.append(("free", self.req, group, list(block_ids), list(freed),
                             list(evictable)))
