"""vLLM 0.33's KV event structs declared as its `vllm/distributed/kv_events.py` declares them
(so the live tests decode kvcli's bytes independently of `kvcore.live.wire`), and the live tests'
sockets and subprocess helpers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
TRACE = str(ROOT / "traces" / "shared-prefix.jsonl")
DATA = Path(__file__).parent / "data" / "live"


# -- vLLM 0.33's structs, declared here as vllm/distributed/kv_events.py declares them ----------
class EventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: int | None = None


class KVCacheEvent(msgspec.Struct, omit_defaults=True, gc=False, tag=True):
    pass


class BlockStored(KVCacheEvent):
    block_hashes: list[bytes | int]
    parent_block_hash: bytes | int | None
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
    block_hashes: list[bytes | int]
    medium: str | None
    group_idx: int | None = None
    locality: str | None = None
    ownership: str | None = None


class AllBlocksCleared(KVCacheEvent):
    pass


class KVEventBatch(EventBatch):
    events: list[BlockStored | BlockRemoved | AllBlocksCleared]


DECODER = msgspec.msgpack.Decoder(KVEventBatch)


def as_dict(batch: KVEventBatch) -> dict:
    return json.loads(msgspec.json.encode(
        {"ts": batch.ts, "events": [{"type": type(e).__name__,
                                     **{f: getattr(e, f) for f in e.__struct_fields__}}
                                    for e in batch.events],
         "data_parallel_rank": batch.data_parallel_rank}))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kvcli(*args: str, timeout: float = 60) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "kvcli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def file_batches(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]
