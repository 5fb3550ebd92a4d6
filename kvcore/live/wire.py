"""vLLM 0.33's KV event batches on the wire (`vllm/distributed/kv_events.py`): msgspec structs
declared as vLLM declares them, so that their msgpack bytes are vLLM's.

* `EventBatch` / `KVEventBatch`: an *array-like* struct ``[ts, events, data_parallel_rank]``
  (a trailing field at its default is omitted);
* the events: *tagged* structs (a map whose ``"type"`` key is the class name), fields at their
  defaults omitted;
* block hashes: vLLM's ``ExternalBlockHash`` (``bytes | int``; kvcore's events carry the 64-bit
  int form, `kvcore.kv_events.hash_to_int`).

`encode_batch` turns a step's `kvcore.kv_events` dataclasses into these bytes; `decode_batch`
reads them back (the subscriber and the tests), `batch_to_dict` gives the JSON form
`--events-format vllm` writes (`kvcore.engine.vllm_events.VllmEvents`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from kvcore import kv_events

ExternalBlockHash = bytes | int
END_SEQ = (-1).to_bytes(8, "big", signed=True)   # the replay socket's end marker


class EventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: int | None = None


class KVCacheEvent(msgspec.Struct, omit_defaults=True, gc=False, tag=True):
    pass


class BlockStored(KVCacheEvent):
    block_hashes: list[ExternalBlockHash]
    parent_block_hash: ExternalBlockHash | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None
    extra_keys: list[tuple[Any, ...] | None] | None = None
    group_idx: int | None = None
    kv_cache_spec_kind: str | None = None
    kv_cache_spec_sliding_window: int | None = None
    locality: str | None = None
    ownership: str | None = None
    session_id: str | None = None
    lookahead_token_ids: list[list[int]] | None = None


class BlockRemoved(KVCacheEvent):
    block_hashes: list[ExternalBlockHash]
    medium: str | None
    group_idx: int | None = None
    locality: str | None = None
    ownership: str | None = None


class AllBlocksCleared(KVCacheEvent):
    pass


class KVEventBatch(EventBatch):
    events: list[BlockStored | BlockRemoved | AllBlocksCleared]


_STRUCTS: dict[type, type] = {kv_events.BlockStored: BlockStored,
                              kv_events.BlockRemoved: BlockRemoved,
                              kv_events.AllBlocksCleared: AllBlocksCleared}


def to_struct(event: kv_events.KVCacheEvent) -> Any:
    """A kvcore event as vLLM's struct (every field, by name)."""
    cls: Any = _STRUCTS[type(event)]
    return cls(**{f: getattr(event, f) for f in cls.__struct_fields__})


class Encoder:
    """One msgpack encoder for a publisher (vLLM's publisher thread keeps one)."""

    def __init__(self) -> None:
        self._enc = msgspec.msgpack.Encoder()

    def encode(self, ts_s: float, events: list, rank: int | None) -> bytes:
        return self._enc.encode(KVEventBatch(ts=ts_s, events=[to_struct(e) for e in events],
                                             data_parallel_rank=rank))


_decoder = msgspec.msgpack.Decoder(KVEventBatch)


def decode_batch(payload: bytes) -> KVEventBatch:
    """A payload read back into vLLM's structs (raises `msgspec.DecodeError` on bad bytes)."""
    return _decoder.decode(payload)


def batch_to_dict(batch: KVEventBatch) -> dict:
    """The JSON form of `--events-format vllm`: ``{"ts", "events": [{"type", <every field>}],
    "data_parallel_rank"}`` (tuples in `extra_keys` become lists, as in JSON; a bytes block
    hash, which vLLM sends with VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0, its hex string: it
    ended `events listen` in a TypeError traceback)."""
    events = []
    for e in batch.events:
        d: dict[str, Any] = {"type": type(e).__name__}
        for f in e.__struct_fields__:
            v = getattr(e, f)
            d[f] = _plain(v) if f in _MAY_HOLD_BYTES else v
        events.append(d)
    return {"ts": batch.ts, "events": events, "data_parallel_rank": batch.data_parallel_rank}


_MAY_HOLD_BYTES = frozenset({"block_hashes", "parent_block_hash", "extra_keys"})


def _plain(v: Any) -> Any:
    """`v` in JSON's types: tuples as lists, bytes as hex."""
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v.hex() if isinstance(v, (bytes, bytearray, memoryview)) else v
