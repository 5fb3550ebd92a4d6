"""The records of the CPU tier: chunk keys, a chunk's status, a request's context and what it
observed, lookup results, an offer's outcome and the tier's events.

vLLM 0.33's `v1/kv_offload/base.py` and `cpu/policies/base.py`. A chunk is `blocks_per_chunk`
GPU blocks; its key is the hash of its **last** GPU block followed by the KV cache group index
as 4 big-endian bytes (raw bytes, as vLLM's `OffloadKey`: two keys compare as vLLM's do, which
decides ties in the LRU's eviction order). The connector, whose keys are all group 0's, keys a
chunk by the block hash alone (`key_int`): the same order and the same equalities.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvcore.kv_events import hash_to_int

HIT = "HIT"
MISS = "MISS"
HIT_PENDING = "HIT_PENDING"     # present, its store not reported yet: not readable


GROUP0_SUFFIX = bytes(4)         # the group index of group 0's keys
NO_KEY = b""                     # a freed status's key (a chunk key is never empty)


def make_key(block_hash: bytes, group: int = 0) -> bytes:
    """The chunk key of a chunk whose last GPU block has this hash, in this group."""
    return block_hash + group.to_bytes(4, "big")


def key_int(key: bytes) -> int:
    """A connector key's 64-bit form (vLLM's event and output form of the chunk key's hash).

    The connector's keys are block hashes without vLLM's group suffix (`make_key`): its
    one group's suffix is the same for every key, so every comparison and dict lookup comes out
    as with it, and the block hash object itself is the key (no new bytes object and no new
    hash per chunk; offload_speed's workload compiled: 2.46 -> 2.39 s CPU with the tier,
    medians of 7)."""
    return hash_to_int(key)


def key_hash(key: bytes) -> bytes:
    return key[:-4]


def key_group(key: bytes) -> int:
    return int.from_bytes(key[-4:], "big")


class ChunkStatus:
    """One resident chunk: its CPU slot, its key and how many transfers read it.

    ``ref_cnt`` -1 while its store is in flight (not readable), 0 when idle (evictable), n > 0
    while n loads read it (pinned). ``key``: the key it is resident under, `NO_KEY` once its
    slot is freed (the manager sets both: a status whose ``key`` is a key is that key's, with no
    dict lookup). ``rank`` and ``run``: the LRU policy's (`lru.py`, `idle_runs.py`: the run
    holding its live entry, 0 for none), unused by others."""

    __slots__ = ("chunk_id", "key", "rank", "ref_cnt", "run")

    def __init__(self, chunk_id: int, key: bytes = b"") -> None:
        self.chunk_id = chunk_id
        self.key = key
        self.ref_cnt = -1
        self.rank = 0
        self.run = 0

    @property
    def is_ready(self) -> bool:
        return self.ref_cnt >= 0


@dataclass(slots=True)
class RequestCacheAccess:
    """The keys one request observed, per group in first-observation order, and how.
    ``observed``: for a context with `ReqContext.chunk_keys`, which of its chunks it observed
    (a flag per chunk index, instead of ``seen`` and ``key_groups``)."""

    generation: int
    key_groups: dict[int, list[bytes]] = field(default_factory=dict)
    seen: set[bytes] = field(default_factory=set)
    inserted: set[bytes] = field(default_factory=set)
    reused: set[bytes] = field(default_factory=set)
    store_missed: set[bytes] = field(default_factory=set)
    finished: bool = False
    observed: bytearray = field(default_factory=bytearray)


class ReqContext:
    """What the tier knows of one request: its id, the end-token position of each of its
    chunk keys (set by the caller as keys appear; it orders a request's keys head to tail)
    and the per-request state the manager and the policy keep, each tagged with the cache
    generation it belongs to (a `reset` starts new ones).

    The connector's requests name their keys by chunk index instead: ``chunk_keys`` is the
    request's list of chunk keys (chunk i ends at token ``(i + 1) * tokens_per_chunk``, its
    position), and the manager's calls say which chunk their first key is. Then
    ``positions`` stays empty: the manager hands the policy positions computed from indices
    (no dict entry per chunk)."""

    __slots__ = ("access", "chunk_keys", "positions", "rank", "req_id", "tokens_per_chunk")

    def __init__(self, req_id: str, chunk_keys: list[bytes] | None = None,
                 tokens_per_chunk: int = 0) -> None:
        self.req_id = req_id
        self.positions: dict[bytes, int] = {}
        self.chunk_keys = chunk_keys
        self.tokens_per_chunk = tokens_per_chunk
        self.access: RequestCacheAccess | None = None   # the manager's
        self.rank: tuple[int, int] | None = None   # the LRU policy's (generation, rank)

    def set_position(self, key: bytes, end_token: int) -> None:
        self.positions[key] = end_token


def order_request_keys(key_groups: tuple[tuple[bytes, ...], ...], ctx: ReqContext
                       ) -> list[bytes]:
    """A request's keys of every group, head to tail: by end position when every key has one,
    else in the order given (first observation)."""
    if len(key_groups) == 1:
        return list(key_groups[0])      # (the manager already ordered each group so)
    keys = [k for group in key_groups for k in group]
    positions = ctx.positions
    if all(map(positions.__contains__, keys)):
        keys.sort(key=positions.__getitem__)
    return keys


@dataclass(slots=True)
class StoreOffer:
    """What a successful `prepare_store` returns: the keys to copy, their slots, the victims,
    and the slots' statuses (for `complete_store`)."""

    keys_to_store: list[bytes]
    chunks: list[int]
    evicted: list[bytes]
    statuses: list[ChunkStatus] = field(default_factory=list)


@dataclass(slots=True)
class TierEvent:
    """Chunks stored or removed (vLLM's `OffloadingEvent`); ``metadata_only``: dropped after a
    failed store, never published as a removal."""

    keys: list[bytes]
    removed: bool
    metadata_only: bool = False
