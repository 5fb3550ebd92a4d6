"""`CachePolicy`: how the CPU tier organises its chunks and picks victims; policies by name.

vLLM 0.33's `v1/kv_offload/cpu/policies/base.py`. The manager owns slots, reference counts,
events and stats; a policy owns the resident chunks (key -> `ChunkStatus`) and their order.
Built in: ``lru`` (`lru.py`) and ``arc`` (`arc.py`), registered here by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable

from kvcore.offload.keys import ChunkStatus, ReqContext


class CachePolicy(ABC):
    """The contract every policy keeps:

    * `get` finds a resident chunk (None when absent); `insert` adds a freshly allocated one
      (its store in flight: ref count -1) on behalf of a request; `remove` drops one (a failed
      store); `touch` marks resident chunks recently used on behalf of a request.
    * `evict(n, protected, freed)` takes exactly ``n`` chunks whose ref count is 0 and whose key
      is not in ``protected`` (their keys, in order; their statuses appended to ``freed``, their
      ``key`` `NO_KEY`), or nothing at all (None): it is atomic.
    * `on_store_miss` sees the absent keys of an offer before they are inserted (once per key
      per request, even when the offer then fails); `on_request_access` the keys a request
      observes for the first time that the tier holds (called at each first observation,
      even with none of them); `on_request_finished` the request's whole access, once.
    * `mark_evictable` / `mark_non_evictable`: a chunk's ref count reached 0 / left 0.
    * `clear` forgets everything, adaptive state included.
    """

    # whether `on_store_miss` does anything (the manager skips its once-per-request filter
    # when it does not), and whether `on_request_finished` reads ``insertion_only`` and
    # ``reused`` (the manager keeps those sets only then)
    watches_store_misses = True
    watches_reuse = True

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity

    @abstractmethod
    def get(self, key: bytes) -> ChunkStatus | None: ...

    def get_many(self, keys: list[bytes]) -> list[ChunkStatus | None]:
        """`get` of each key, in order."""
        return [self.get(k) for k in keys]

    @abstractmethod
    def insert(self, key: bytes, chunk: ChunkStatus, ctx: ReqContext) -> None: ...

    @abstractmethod
    def remove(self, key: bytes) -> None: ...

    @abstractmethod
    def touch(self, keys: list[bytes], ctx: ReqContext) -> None: ...

    @abstractmethod
    def evict(self, n: int, protected: set[bytes], freed: list[ChunkStatus]
              ) -> list[bytes] | None: ...

    @abstractmethod
    def clear(self) -> None: ...

    @abstractmethod
    def state(self, key_out) -> dict:
        """The policy's part of the manager's `state` (the oracle's names; keys through
        ``key_out``)."""

    @abstractmethod
    def end_state(self, key_out) -> dict:
        """The order of the resident chunks for a replay's summary (the oracle's
        ``policy_state_end``)."""

    def on_store_miss(self, keys: list[bytes], ctx: ReqContext) -> None:
        self.touch(keys, ctx)

    def on_request_access(self, keys: list[bytes], ctx: ReqContext,
                          positions: list[int] | None = None) -> None:
        """``positions``: each key's end position (None: ``ctx.positions``)."""
        return

    def on_request_finished(self, key_groups: tuple[tuple[bytes, ...], ...],
                            insertion_only: set[bytes], reused: set[bytes],
                            ctx: ReqContext) -> None:
        for keys in key_groups:
            self.touch(list(keys), ctx)

    def mark_evictable(self, key: bytes) -> None:
        return

    def mark_evictable_many(self, keys: list[bytes], chunks: list[ChunkStatus]) -> None:
        """`mark_evictable` of each key (``chunks``: their statuses), in order."""
        for key in keys:
            self.mark_evictable(key)

    def insert_many(self, keys: list[bytes], chunks: list[ChunkStatus], ctx: ReqContext,
                    positions: list[int] | None = None) -> None:
        """`insert` of each key with its chunk, in order (``positions``: as
        `on_request_access`'s)."""
        for key, chunk in zip(keys, chunks):
            self.insert(key, chunk, ctx)

    def mark_non_evictable(self, key: bytes) -> None:
        return

    def resident(self) -> Iterable[bytes]:
        """Every resident key (any order)."""
        raise NotImplementedError


POLICIES: dict[str, type[CachePolicy]] = {}    # filled by lru.py and arc.py


def make_policy(name: str, capacity: int) -> CachePolicy:
    """The policy registered under ``name`` (``lru`` or ``arc``) for ``capacity`` chunks."""
    # The built-ins register themselves on import.
    from kvcore.offload import arc, lru  # noqa: F401
    try:
        cls = POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown eviction policy {name!r} (one of: "
                         f"{', '.join(sorted(POLICIES))})") from None
    return cls(capacity)
