"""vLLM 0.33's KV cache events (`vllm/distributed/kv_events.py`), every field.

The pool queues one `BlockStored` per `cache_full_blocks` call with new full blocks (even when
every one is null or masked out: empty ``block_hashes``, as vLLM's block_pool.py:307-356),
one `BlockRemoved` per cache key dropped (a cached block reused by `get_new_blocks`,
`evict_blocks`, or a partial key replaced when `cache_full_blocks` fills its block), and
`AllBlocksCleared` on a successful reset. A freed block is *not* removed: it stays cached until
it is reused. `block_stored_event` builds the pool's `BlockStored`;
`KVCacheManager.take_events` drains the queue and fills in each one's spec kind and sliding window.

Hashes in events are vLLM's default external form (``VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1``):
the low 64 bits of the block hash read big-endian, as an unsigned int (`hash_to_int`). This is
the stream KV-aware routers (llm-d, Dynamo) index. `to_dict()` gives the JSON form the oracle
prints: ``{"type": "BlockStored", <fields in vLLM's order>}``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from kvcore.hashing import (
    generate_block_hash_extra_keys,
    generate_lookahead_block_hash_extra_keys,
    to_event_extra_keys,
)

if TYPE_CHECKING:
    from kvcore.block import KVCacheBlock
    from kvcore.request import Request

MEDIUM_GPU = "GPU"
MEDIUM_CPU = "CPU"
_MASK64 = (1 << 64) - 1


# The last 8 bytes read big-endian in place: 2.4x faster than slicing them and
# `int.from_bytes` (83 vs 202 us per 1,000 sha256 hashes, timeit; an 8-replica cluster behind
# an event-fed router spent 11.6% of its time here).
_TAIL = struct.Struct(">Q").unpack_from


def hash_to_int(block_hash: bytes) -> int:
    """The 64-bit external form of a block hash: ``int.from_bytes(h, "big") & (2**64 - 1)``."""
    n = len(block_hash)
    return _TAIL(block_hash, n - 8)[0] if n >= 8 else int.from_bytes(block_hash, "big") & _MASK64


def hashes_to_ints(hashes: Sequence[bytes]) -> list[int]:
    """`hash_to_int` of each hash."""
    tail = _TAIL
    return [tail(h, len(h) - 8)[0] if len(h) >= 8 else hash_to_int(h) for h in hashes]


class KVCacheEvent:
    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]


# Each event's first field is its `type` (not an argument, not compared, not shown), so that
# orjson writes the object itself as vLLM's JSON form, `{"type", <fields in vLLM's order>}`,
# with no dict made per event: `VllmEvents` (`--events-format vllm`, one event per evicted
# block) measured in `kvcore/engine/vllm_events.py`.


@dataclass(slots=True)
class BlockStored(KVCacheEvent):
    type: str = field(default="BlockStored", init=False, repr=False, compare=False)
    block_hashes: list[int]
    parent_block_hash: int | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None
    extra_keys: list[tuple | None] | None = None
    group_idx: int | None = None
    kv_cache_spec_kind: str | None = None
    kv_cache_spec_sliding_window: int | None = None
    locality: str | None = None
    ownership: str | None = None
    session_id: str | None = None
    lookahead_token_ids: list[list[int]] | None = None


@dataclass(slots=True)
class BlockRemoved(KVCacheEvent):
    type: str = field(default="BlockRemoved", init=False, repr=False, compare=False)
    block_hashes: list[int]
    medium: str | None
    group_idx: int | None = None
    locality: str | None = None
    ownership: str | None = None


@dataclass(slots=True)
class AllBlocksCleared(KVCacheEvent):
    type: str = field(default="AllBlocksCleared", init=False, repr=False, compare=False)


def removed_events(hashes: list[bytes], groups: list[int], medium: str | None
                   ) -> list[BlockRemoved]:
    """One `BlockRemoved` per evicted key, in eviction order (`BlockPool.get_new_blocks`):
    here, not in the compiled pool, whose `hash_to_int` a key was a call into the interpreter
    (`--events-format vllm`, first 600 conversation requests, compiled: -4.4% instructions)."""
    tail = _TAIL
    return [BlockRemoved([tail(h, len(h) - 8)[0] if len(h) >= 8 else hash_to_int(h)], medium, g)
            for h, g in zip(hashes, groups)]


def block_stored_event(request: Request, blocks: list[KVCacheBlock], hashes: Sequence[bytes],
                       stored_hashes: list[bytes], num_cached_blocks: int, num_full_blocks: int,
                       block_size: int, group: int, block_mask: list[bool] | None,
                       medium: str) -> BlockStored:
    """The one `BlockStored` of a `BlockPool.cache_full_blocks` call that cached
    ``stored_hashes``: blocks ``[num_cached_blocks, num_full_blocks)`` of the request's table,
    null blocks and those the mask leaves out skipped."""
    extra: list[tuple | None] = []
    mm_idx = 0
    # EAGLE's lookahead hashes (`kvcore.lookahead_hashes`): the event's keys cover the block
    # and its next token, which it also lists (vLLM's `lookahead_token_ids`)
    hasher = request._block_hasher
    ahead: list[list[int]] | None = [] if getattr(hasher, "lookahead", False) else None
    for i in range(num_cached_blocks, num_full_blocks):
        if blocks[i].is_null or (block_mask is not None
                                 and not block_mask[i - num_cached_blocks]):
            continue
        start = i * block_size
        end = start + block_size
        if ahead is None:
            keys, mm_idx = generate_block_hash_extra_keys(request, start, end, mm_idx)
        else:
            keys, mm_idx = generate_lookahead_block_hash_extra_keys(request, start, end, mm_idx)
            ahead.append(request.token_ids(end, end + 1))
        extra.append(keys)
    lora = request.lora_request
    return BlockStored(
        block_hashes=hashes_to_ints(stored_hashes),
        parent_block_hash=(hash_to_int(hashes[num_cached_blocks - 1])
                           if num_cached_blocks > 0 else None),
        token_ids=request.token_ids(num_cached_blocks * block_size,
                                    num_full_blocks * block_size),
        block_size=block_size,
        lora_id=lora.lora_int_id if lora is not None else None,
        medium=medium,
        lora_name=lora.lora_name if lora is not None else None,
        extra_keys=to_event_extra_keys(extra),
        group_idx=group,
        session_id=request.session_id,
        lookahead_token_ids=ahead,
    )
